"""``ComposerOutput.claims_shown``: the used claims the published answer really shows or rests
on (issue 28), next to ``claims_used`` (what the composer let through)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.reports import SHIPPED
from support.scenario_runs import load_raw, run_file, script_entries, write_scenario

HIDES_RAW = SHIPPED / "verifier" / "reject-hides-raw-answer.yaml"


@pytest.mark.parametrize(
    ("path", "source", "used", "shown"),
    [
        ("routing/pass-direct.yaml", "composed", ["claim-1"], ["claim-1"]),
        ("matrix/02-highmemory-positive.yaml", "composed", ["claim-1"], ["claim-1"]),
        ("soundness/claim-hidden-combining-mark.yaml", "composed", [], []),
        (
            "verifier/low-confid-partial-evidence.yaml",
            "template",
            ["claim-1", "claim-2"],
            ["claim-1", "claim-2"],
        ),
        ("verifier/reject-hides-raw-answer.yaml", "template", ["claim-1"], ["claim-1"]),
        ("matrix/06-gatekeeper-reject.yaml", "template", [], []),
    ],
)
def test_the_claims_shown_are_those_the_answer_prints_or_rests_on(
    path: str, source: str, used: list[str], shown: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_file(SHIPPED / path, monkeypatch).result
    output = result.composer_output
    assert output is not None

    assert (output.source, output.claims_used, output.claims_shown) == (source, used, shown)


def test_a_degraded_answer_shows_no_indirectly_supported_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = load_raw(HIDES_RAW)
    script_entries(data, "verifier")[0]["content"]["facts_checked"][0]["verification"] = (
        "indirect_support"
    )

    result = run_file(write_scenario(data, tmp_path / HIDES_RAW.name), monkeypatch).result

    output = result.composer_output
    assert output is not None
    assert (result.answer_kind, output.claims_used, output.claims_shown) == (
        "degraded",
        ["claim-1"],
        [],
    )
    assert "已确认的事实" not in result.final_answer
