"""pytest-xdist: keep the items of one scenario on one worker, with xdist's own ``loadgroup``.

A scenario's pipeline runs once per process; spreading its expectation items over two
workers would run it twice. Each scenario item carries ``xdist_group(<scenario id>)``, which
xdist honours under ``--dist loadgroup`` only. So when a run distributes with xdist's default
``load`` and its paths can hold scenarios, :func:`prefer_loadgroup` switches it to
``loadgroup``: every test without the marker stays its own unit, as under ``load``. Any other
``--dist`` the user chose, and every run that cannot collect a scenario, is left as it is.
The scheduler for ``loadgroup`` is xdist's own, made robust to a pytest whose node ids xdist
cannot tag (:mod:`~pytest_diageval.harness.xdist.group_scheduler`).

The decision is made on the controller before the workers start (they collect, the
controller never does), from the command-line paths (or ``testpaths``): a scenario file
named there, or a scenario folder at, above or below one of them. No heavy imports here.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from pytest_diageval.harness.settings import (
    configured_cassette_dir,
    configured_scenario_dirs,
    explicit_paths,
    is_scenario_file,
)

__all__ = ["may_collect_scenarios", "prefer_loadgroup"]

_PROBE = "diageval-probe.yaml"
"""A file name joined to a folder to ask whether YAML files there would be scenarios."""


def prefer_loadgroup(config: pytest.Config) -> None:
    """Switch xdist's default ``load`` distribution to ``loadgroup`` when scenarios may run."""
    if hasattr(config, "workerinput") or config.getoption("dist", "no") != "load":
        return
    if may_collect_scenarios(config):
        config.option.dist = "loadgroup"


def may_collect_scenarios(config: pytest.Config) -> bool:
    """Whether collecting the run's paths can yield a scenario (a cheap, safe over-estimate)."""
    roots = (config.rootpath, config.invocation_params.dir)
    cassette_dir = configured_cassette_dir(config)
    scenario_dirs = configured_scenario_dirs(config)
    explicit = explicit_paths(config)

    def scenario_folder(folder: Path) -> bool:
        probe = folder / _PROBE
        return is_scenario_file(probe, cassette_dir, roots, scenario_dirs=scenario_dirs)

    for path in explicit:
        if path.is_file() and is_scenario_file(path, cassette_dir, roots, explicit=explicit):
            return True
        if path.is_dir() and any(map(scenario_folder, _folders(path, config))):
            return True
    return False


def _folders(top: Path, config: pytest.Config) -> Iterable[Path]:
    """``top`` and the folders below it that pytest would recurse into (``norecursedirs``)."""
    skip = [str(pattern) for pattern in config.getini("norecursedirs")]
    for folder, children, _ in os.walk(top):
        yield Path(folder)
        children[:] = [name for name in children if not any(fnmatch.fnmatch(name, p) for p in skip)]
