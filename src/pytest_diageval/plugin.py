"""pytest entry point of pytest-diageval (registered through the ``pytest11`` entry point).

Hooks, options and fixtures only; the work lives in :mod:`pytest_diageval.harness` (scenario
files, items, cassettes, reports), the agents and the core below it. Heavy imports happen
inside the hooks, so a pytest run that collects no scenario pays almost nothing.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "diageval_run",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_diageval_register_checks",
    "pytest_runtest_makereport",
    "pytest_terminal_summary",
    "pytest_xdist_make_scheduler",
]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """``pytest_diageval_register_checks`` (checks of a project's own) and
    ``pytest_diageval_report_columns`` (its report columns): ``harness/hookspecs.py``."""
    from pytest_diageval.harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_diageval_register_checks(registry: Any) -> None:
    """The built-in ``expect`` keys first, then those of the packages' entry points
    (``pytest_diageval.checks``); a project's conftest.py adds its own after them."""
    from pytest_diageval.harness.checks.evaluators import register_builtin_checks
    from pytest_diageval.harness.format.registry import register_entry_point_checks

    register_builtin_checks(registry)
    register_entry_point_checks(registry)


def pytest_addoption(parser: pytest.Parser) -> None:
    from pytest_diageval.harness.settings import (
        DEFAULT_SCENARIO_DIRS,
        RECORD_MODES,
        html_option,
        repeat_option,
        report_option,
        request_option,
        summary_option,
        timeout_option,
    )

    group = parser.getgroup("diageval", "evidence-grounded diagnosis scenarios")
    group.addoption(
        "--diageval-record",
        choices=(*RECORD_MODES, "stale"),
        default="none",
        help="cassette record mode (pytest-recording's names): none replays only (default);"
        " stale re-records exactly the scenarios whose cassettes are stale or missing",
    )
    group.addoption(
        "--diageval-base-url",
        default=None,
        help="OpenAI-compatible base URL to record against (default: $OPENAI_BASE_URL);"
        " replays send the cassette's",
    )
    group.addoption(
        "--diageval-model",
        default=None,
        help="model name to record with (default: $DIAGEVAL_MODEL); replays send the cassette's",
    )
    group.addoption(
        "--diageval-timeout",
        type=timeout_option,
        default=None,
        metavar="SECONDS",
        help="seconds per model request when recording (default: $DIAGEVAL_TIMEOUT or 60)",
    )
    _add_request_options(parser, group, request_option)
    group.addoption(
        "--diageval-points",
        choices=("offer", "omit"),
        default="omit",
        help="recording: offer points in the executor's contract (offer: each claim may point"
        " at its items' fields, decided by code; docs/points.md) or not (omit, default);"
        " replays send what the cassette was recorded with",
    )
    group.addoption(
        "--diageval-report",
        metavar="PATH.json",
        type=report_option,
        default=None,
        help="write every scenario's results and full audit trail as JSON",
    )
    group.addoption(
        "--diageval-mutate",
        action="store_true",
        default=False,
        help="mutation-test the guards: forge the contract and verifier output of every"
        " scenario that reaches PASS; each mutant is an item that fails if it still passes",
    )
    group.addoption(
        "--diageval-repeat",
        type=repeat_option,
        default=None,
        metavar="N",
        help="N samples per scenario: a record mode records N runs (sample 1 is the cassette,"
        " sample k beside it as NAME.sample-k.yaml); a replay runs N (default: all recorded)",
    )
    group.addoption(
        "--diageval-require-samples",
        choices=("all", "any"),
        default="all",
        help="with several samples, an expectation passes when it holds on all of them"
        " (pass^k, default) or on any (pass@k); one that holds on some is flaky either way",
    )
    parser.addini(
        "diageval_scenario_dirs",
        "folders whose *.yaml / *.yml files are scenarios: a name matches at any depth, a"
        " path with '/' is relative to rootdir (default: scenarios); files named on the"
        " command line are always collected",
        type="args",
        default=list(DEFAULT_SCENARIO_DIRS),
    )
    parser.addini(
        "diageval_allowed_roots",
        "folders (relative to rootdir) besides rootdir where scenario worlds and cassettes"
        " may live; a path outside them is an error and is never opened",
        type="args",
        default=[],
    )
    parser.addini(
        "diageval_cassette_dir",
        "folder of default cassettes, relative to rootdir (default: cassettes/ beside a scenario)",
        default="",
    )
    group.addoption(
        "--diageval-html",
        metavar="PATH.html",
        type=html_option,
        default=None,
        help="write one self-contained HTML page: every scenario with its evidence and claims",
    )
    group.addoption(
        "--diageval-baseline",
        metavar="OLD.json",
        default=None,
        help="a previous --diageval-report: mark what changed per scenario (terminal and HTML)",
    )
    group.addoption(
        "--diageval-summary",
        metavar="PATH.md",
        type=summary_option,
        default=None,
        help="write a Markdown summary of the run (totals, failing scenarios, baseline changes);"
        " $GITHUB_STEP_SUMMARY, when set, gets it appended",
    )


_REQUEST_OPTIONS = (
    ("temperature", "VALUE", "float >= 0 or omit; default 0"),
    (
        "max_tokens",
        "N",
        "int >= 1 or omit; default per stage: planner 512, executor 2048,"
        " verifier 1536, grader 512",
    ),
    (
        "extra_body",
        "JSON-OBJECT",
        'merged into the request body, e.g. \'executor={"reasoning_effort":"low"}\'',
    ),
)


def _add_request_options(parser: pytest.Parser, group: Any, entry_type: Any) -> None:
    """``--diageval-temperature`` / ``-max-tokens`` / ``-extra-body`` and their ini: the
    requests' options per stage (agents/request_options.py), for recordings."""
    for kind, metavar, what in _REQUEST_OPTIONS:
        flag = "--diageval-" + kind.replace("_", "-")
        group.addoption(
            flag,
            action="append",
            type=entry_type(kind),
            default=None,
            metavar=f"[STAGE=]{metavar}",
            help=f"request {kind} when recording, for every stage or STAGE= one of planner,"
            f" executor, verifier, grader (repeatable; a staged entry wins): {what};"
            " replays send the cassette's",
        )
        parser.addini(
            f"diageval_{kind}",
            f"like {flag}: whitespace-separated [STAGE=]{metavar} entries (the command line's"
            " replace them)",
            type="linelist",
            default=[],
        )


def pytest_configure(config: pytest.Config) -> None:
    from pytest_diageval.harness.report.reporter import DiagevalReporter
    from pytest_diageval.harness.settings import request_options
    from pytest_diageval.harness.xdist.scheduling import prefer_loadgroup

    request_options(config)  # a bad entry stops the run here, before collection
    record = config.getoption("diageval_record")
    if record == "stale":
        _start_stale_rerecording(config)
    if record != "none" and not config.getoption("diageval_mutate"):
        from pytest_diageval.harness.cassettes.interrupt import TerminationAsInterrupt
        from pytest_diageval.harness.cassettes.progress import RecordingProgress
        from pytest_diageval.harness.settings import PROGRESS_PLUGIN

        config.pluginmanager.register(RecordingProgress(config), PROGRESS_PLUGIN)
        config.pluginmanager.register(TerminationAsInterrupt(), "diageval-sigterm")
    # The run settings (endpoint, timeout from the environment) are read when the first
    # scenario is collected (settings.run_settings), never here: see SettingsError.
    if config.getoption("diageval_mutate"):
        _configure_mutation(config)
    else:
        config.pluginmanager.register(DiagevalReporter(config), "diageval-reporter")
    if config.option.markers:  # `pytest --markers` collects nothing: read the tags
        from pytest_diageval.harness.format.markers import register_tag_markers

        register_tag_markers(config)
    # Before xdist makes its scheduler (on the controller, from this option).
    prefer_loadgroup(config)
    # instructor logs every failed attempt at ERROR; the items report those failures
    # themselves, compactly, so the same text three more times is only noise.
    logging.getLogger("instructor").setLevel(logging.CRITICAL)
    if config.getoption("diageval_html") or config.getoption("diageval_baseline"):
        from pytest_diageval.harness.report.review import register_review

        register_review(config)
    from pytest_diageval.harness.report.ci_summary import register_ci_summary

    register_ci_summary(config)  # --diageval-summary or $GITHUB_STEP_SUMMARY, else nothing


def _start_stale_rerecording(config: pytest.Config) -> None:
    if config.getoption("numprocesses", None):
        raise pytest.UsageError(
            "--diageval-record=stale runs in one process (drop -n): it replays every cassette"
            " first to find the stale ones, then records only those"
        )
    from pytest_diageval.harness.stale import StaleRerecording

    config.pluginmanager.register(StaleRerecording(config), "diageval-stale")


def _configure_mutation(config: pytest.Config) -> None:
    from pytest_diageval.harness.mutation.mutation_summary import MutationReporter

    if config.getoption("diageval_record") != "none":
        raise pytest.UsageError(
            "--diageval-mutate replays only and never touches the network;"
            f" drop --diageval-record={config.getoption('diageval_record')}"
        )
    config.pluginmanager.register(MutationReporter(config), "diageval-mutation-reporter")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    from pytest_diageval.harness.outside_dirs import note_collected, note_skipped
    from pytest_diageval.harness.settings import (
        SCENARIO_SUFFIXES,
        configured_cassette_dir,
        configured_scenario_dirs,
        explicit_paths,
        is_scenario_file,
    )

    if file_path.suffix not in SCENARIO_SUFFIXES:  # the common case, decided at once
        return None
    config = parent.config
    # Folders above the project (say ~/worlds/project) must not stop collection.
    roots = (config.rootpath, config.invocation_params.dir)
    cassette_dir = configured_cassette_dir(config)
    if not is_scenario_file(
        file_path,
        cassette_dir,
        roots,
        scenario_dirs=configured_scenario_dirs(config),
        explicit=explicit_paths(config),
    ):
        note_skipped(config, file_path, cassette_dir, roots)  # named if nothing is collected
        return None
    note_collected(config)
    from pytest_diageval.harness.collect import ScenarioFile  # the heavy imports start here

    if config.getoption("diageval_mutate"):
        from pytest_diageval.harness.mutation.mutant_items import MutationFile

        return MutationFile.from_parent(parent, path=file_path)
    node: pytest.Collector = ScenarioFile.from_parent(parent, path=file_path)
    return node


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """A run that collected no scenario names the scenario files outside the scenario folders."""
    from pytest_diageval.harness.outside_dirs import outside_lines

    for line in outside_lines(config):
        terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    items: list[pytest.Item], config: pytest.Config
) -> Generator[None, None, None]:
    """A broken scenario file stays selected whatever ``-k`` / ``-m`` say.

    As an item it must not let a narrow selection pass while a scenario file cannot even be
    read. The selecting hooks
    never see it (so it is not counted as deselected); it runs last. A file that failed
    before a later conftest.py registered more checks is loaded again first.
    """
    items_module = sys.modules.get("pytest_diageval.harness.collect")  # loaded by a scenario
    if items_module is not None:
        items_module.reload_late_checks(items, config)  # failed before a later conftest's checks
        items_module.fail_reused_ids(items)  # a scenario whose id a later file reused: neither
    invalid_type: type[pytest.Item] | None = getattr(items_module, "InvalidScenario", None)
    invalid = [item for item in items if invalid_type and isinstance(item, invalid_type)]
    if invalid:
        items[:] = [item for item in items if item not in invalid]
    yield
    items.extend(invalid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the scenario's summary (and, once per scenario, its audit) to the report."""
    report = yield
    from pytest_diageval.harness.items import ScenarioItem

    if isinstance(item, ScenarioItem):
        item.share_report_fields(report)
    if isinstance(item, ScenarioItem) and call.when == "call":
        report.diageval = item_payload(item)  # type: ignore[attr-defined]
        if _wants_records(item.config):  # the JSON report and the HTML page list every check
            from pytest_diageval.harness.report.review import expectation_record

            report.diageval["expectation"] = expectation_record(item, report)
    return report


def _wants_records(config: pytest.Config) -> bool:
    from pytest_diageval.harness.report.reporter import RECORD_OPTIONS

    return any(config.getoption(name) for name in RECORD_OPTIONS)


def item_payload(item: Any) -> dict[str, Any]:
    from pytest_diageval.harness.report.reporter import audit_record

    node = item.scenario_node
    payload: dict[str, Any] = {
        "scenario": node.scenario_id,
        "audit": None,
        "key": item.key,
        "message": item.check_message(),
        "stale": stale_cassette(node, node.run_error()),
    }
    if item.sample_stats is not None:  # several samples: pass@k, pass^k, flaky
        payload["samples"] = item.sample_stats.as_dict()
    summary = node.unsent_summary()
    if summary is not None:  # once per run: the reporter keeps the row
        payload["summary"] = summary
    if _wants_records(item.config) and not node.audit_reported:
        node.audit_reported = True
        payload["audit"] = audit_record(node.scenario, node.path, node.run(), item.config.rootpath)
    return payload


def stale_cassette(node: Any, error: BaseException | None) -> dict[str, Any] | None:
    """What the end-of-run re-record command needs from a scenario whose cassette is stale."""
    if node.cassette is None:  # before the imports: a scripted suite never loads vcrpy (8 MB)
        return None
    from pytest_diageval.harness.cassettes.rerecord import display_path
    from pytest_diageval.harness.stale import is_stale_error

    if not is_stale_error(error):
        return None
    metadata = node.recording_metadata()
    options = [] if metadata is None else metadata.options()
    return {"file": display_path(node.path), "options": options}


@pytest.fixture
def diageval_run(request: pytest.FixtureRequest) -> Any:
    """Run a scenario file from a Python test: ``diageval_run("scenarios/x.yaml")`` returns
    its result and the outcome of every ``expect`` key (see ``harness/fixture.py``)."""
    from pytest_diageval.harness.fixture import ScenarioRunner

    return ScenarioRunner(request.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup`` only (which :func:`pytest_configure` picks when the run can
    collect scenarios): xdist's loadgroup scheduler that also keeps each scenario together."""
    if config.getoption("dist", "no") != "loadgroup":
        return None  # xdist's own scheduler for every other distribution
    from pytest_diageval.harness.xdist.group_scheduler import ScenarioGroupScheduling

    return ScenarioGroupScheduling(config, log)
