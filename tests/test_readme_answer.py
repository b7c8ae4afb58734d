"""docs/pipeline.md's rendered-answer example is the answer the shipped scenario gives today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.scenario_runs import MATRIX_DIR, run_file

PIPELINE = Path(__file__).resolve().parents[1] / "docs" / "pipeline.md"


def test_the_readmes_rendered_answer_is_the_matrix_scenarios_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = PIPELINE.read_text("utf-8")
    blocks = re.findall(r"   ```text\n(.*?)\n   ```", text, flags=re.DOTALL)
    rendered = next(b for b in blocks if b.startswith("   已确认（"))
    shown = "\n".join(line.removeprefix("   ") for line in rendered.splitlines())
    result = run_file(MATRIX_DIR / "02-highmemory-positive.yaml", monkeypatch).result
    assert shown == result.final_answer
