"""The evidence-tool table is the one place a tool's name and output shape are written."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from pytest_diageval.core.contract import evidence_tools
from pytest_diageval.core.contract.contracts import EVIDENCE_TOOLS
from pytest_diageval.core.contract.evidence_tools import (
    EVIDENCE_TOOL_TABLE,
    EvidenceTool,
    ToolName,
    evidence_tool,
)
from pytest_diageval.core.contract.gatekeeper_rules import ALLOWED_RAW_PATH_FORMS, NO_HIT_RAW_PATHS
from pytest_diageval.core.evidence.recorder import EVIDENCE_LIST_KEYS
from pytest_diageval.core.evidence.tool_arguments import TOOL_ARGUMENT_MODELS, TOOL_DEFINITIONS
from pytest_diageval.core.evidence.world import FailingTool
from pytest_diageval.core.judge.citation import canonical_raw_path
from support.source_scan import string_constants

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src" / "pytest_diageval"
TABLE_MODULE = SRC / "core" / "contract" / "evidence_tools.py"
NAMES = {tool.name for tool in EVIDENCE_TOOL_TABLE}


def _tool_name_literals(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of every string constant that is exactly a tool name (docstrings and
    prose that mentions a tool are not names the code acts on)."""
    return [(line, value) for line, value in string_constants(path) if value in NAMES]


def test_no_module_but_the_table_writes_a_tool_name() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path != TABLE_MODULE
        for line, name in _tool_name_literals(path)
    ]
    assert found == [], "name the tool through core.contract.evidence_tools instead"


def test_the_scan_sees_a_tool_name_written_as_a_string(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Docs may say query_logs."""\nTOOL = "query_logs"\n', encoding="utf-8")
    assert _tool_name_literals(module) == [(2, "query_logs")]


def test_every_reader_takes_its_values_from_the_table() -> None:
    assert EVIDENCE_TOOLS == get_args(ToolName) == get_args(FailingTool)
    assert EVIDENCE_TOOLS == ("query_metrics", "query_logs", "lookup_knowledge")
    assert EVIDENCE_LIST_KEYS == {
        "query_metrics": "alerts",
        "query_logs": "logs",
        "lookup_knowledge": "evidence_blocks",
    }
    assert NO_HIT_RAW_PATHS == {
        "query_metrics": "$.alerts",
        "query_logs": "$.logs",
        "lookup_knowledge": "$.evidence_blocks",
    }
    assert ALLOWED_RAW_PATH_FORMS == ("$.alerts[i]", "$.logs[i]", "$.evidence_blocks[i]")
    assert {"query_metrics", "query_logs"} == evidence_tools.INCIDENT_EVIDENCE_TOOLS
    assert {"lookup_knowledge"} == evidence_tools.GUIDANCE_TOOLS
    assert evidence_tool("get_current_time") is None


@pytest.mark.parametrize("tool", EVIDENCE_TOOL_TABLE, ids=lambda t: t.name)
def test_the_arguments_are_the_argument_models_and_the_offered_definition(
    tool: EvidenceTool,
) -> None:
    assert tuple(TOOL_ARGUMENT_MODELS[tool.name].model_fields) == tool.arguments
    offered = next(d for d in TOOL_DEFINITIONS if d["function"]["name"] == tool.name)
    assert tuple(offered["function"]["parameters"]["properties"]) == tool.arguments
    assert canonical_raw_path(tool.raw_path_form.replace("[i]", "[07]")) == f"$.{tool.list_key}[7]"
