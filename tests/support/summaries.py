"""Tool trace summary entries for verdict and fact-support tests, built in one line each."""

from __future__ import annotations

from pytest_diageval.core.contract.contracts import ToolTraceSummaryItem

__all__ = ["summary_item"]


def summary_item(
    trace_ref: str, tool: str, ids: list[int], level: str, **counts: int
) -> ToolTraceSummaryItem:
    """One successful entry; ``no_hit`` / ``deduped`` counts as keyword arguments."""
    return ToolTraceSummaryItem(
        trace_ref=trace_ref,
        tool_name=tool,
        source_invocation_ids=ids,
        success=True,
        input_summary="service=order-service",
        output_summary=f"{tool} summary",
        evidence_level=level,
        invocation_count=len(ids),
        no_hit_invocation_count=counts.get("no_hit", 0),
        failed_invocation_count=0,
        deduped_invocation_count=counts.get("deduped", 0),
    )
