"""The evidence tools: the one place their names, arguments and output shapes are written.

An evidence tool's call is one ``tool_invocation`` row, and the items of one list of its output
are what a contract cites (``$.<list_key>[i]``); a completed call that found nothing is cited by
the list itself (``$.<list_key>``, its no-hit path). The contract schema, the world loader, the
recorder, the gatekeeper, the trace summary and the argument models read this table; every
other module names a tool through :data:`QUERY_METRICS`, :data:`QUERY_LOGS`,
:data:`LOOKUP_KNOWLEDGE` or a row (a test fails on a tool name written as a string elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "EVIDENCE_TOOL_TABLE",
    "GUIDANCE_TOOLS",
    "INCIDENT_EVIDENCE_TOOLS",
    "LOOKUP_KNOWLEDGE",
    "QUERY_LOGS",
    "QUERY_METRICS",
    "EvidenceTool",
    "ToolName",
    "evidence_tool",
]

ToolName = Literal["query_metrics", "query_logs", "lookup_knowledge"]
"""An evidence tool's name, for types (a test holds it equal to the table's names)."""

QUERY_METRICS: ToolName = "query_metrics"
QUERY_LOGS: ToolName = "query_logs"
LOOKUP_KNOWLEDGE: ToolName = "lookup_knowledge"


@dataclass(frozen=True)
class EvidenceTool:
    """One evidence tool."""

    name: ToolName
    arguments: tuple[str, ...]  # the names its argument model takes, in order
    list_key: str  # the output list whose items a contract cites
    fact_prefix: str  # how the trace summary labels its evidence
    incident_evidence: bool  # True: a fact of this incident; False: guidance (a runbook)

    @property
    def raw_path_form(self) -> str:
        """How a contract cites one item: ``$.alerts[i]``."""
        return f"$.{self.list_key}[i]"

    @property
    def no_hit_path(self) -> str:
        """How a contract cites the empty result of a completed search: ``$.alerts``."""
        return f"$.{self.list_key}"


EVIDENCE_TOOL_TABLE: tuple[EvidenceTool, ...] = (
    EvidenceTool(
        QUERY_METRICS,
        ("service", "alert_name", "keywords"),
        "alerts",
        "metric_evidence",
        incident_evidence=True,
    ),
    EvidenceTool(
        QUERY_LOGS,
        ("service", "keywords", "level", "limit"),
        "logs",
        "log_evidence",
        incident_evidence=True,
    ),
    EvidenceTool(
        LOOKUP_KNOWLEDGE,
        ("query", "top_k"),
        "evidence_blocks",
        "knowledge_guidance",
        incident_evidence=False,
    ),
)
"""The evidence tools, in the order the model is offered them."""

INCIDENT_EVIDENCE_TOOLS = frozenset(t.name for t in EVIDENCE_TOOL_TABLE if t.incident_evidence)
"""Tools whose output is a fact of this incident."""
GUIDANCE_TOOLS = frozenset(t.name for t in EVIDENCE_TOOL_TABLE if not t.incident_evidence)
"""Tools whose output is guidance (runbooks), never a confirmed incident fact."""

assert tuple(t.name for t in EVIDENCE_TOOL_TABLE) == get_args(ToolName), "ToolName drifted"


def evidence_tool(name: str) -> EvidenceTool | None:
    """The row of ``name``; None for a tool that is not an evidence tool."""
    return next((tool for tool in EVIDENCE_TOOL_TABLE if tool.name == name), None)
