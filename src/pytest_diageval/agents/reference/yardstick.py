"""The reference agent as a yardstick: how much of the question's evidence a model found.

For a recorded run, :func:`evidence_recall` asks the reference agent the same question on the
same world and compares evidence items by their text (the item's whole ref text, which the
recorder writes the same for both): which of the items the reference cites the model's calls
returned (*fetched*), which a passed binding of the model's last round cites (*cited*), and how
many of the model's evidence calls named a service the reference never searched (*off
subject*; a question whose reference searched no service counts none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_diageval.agents.reference.answers import reference_script
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.core.evidence.world import World

__all__ = ["EvidenceRecall", "evidence_recall"]


@dataclass(frozen=True)
class EvidenceRecall:
    """The model's evidence against the reference's, item by item."""

    reference: int
    """Items the reference agent cites."""
    fetched: int
    """Of those, items some evidence call of the model returned."""
    cited: int
    """Of those, items a passed binding of the model's last round cites."""
    off_subject: int
    """The model's evidence calls on a service the reference never searched."""
    missed: tuple[str, ...] = ()
    """The reference's items the model never fetched (their ref texts)."""

    def text(self) -> str:
        if not self.reference:
            return f"no item to find · off-subject calls {self.off_subject}"
        return (
            f"cited {self.cited}/{self.reference} · fetched {self.fetched}/{self.reference}"
            f" · off-subject calls {self.off_subject}"
        )


def evidence_recall(result: ChatResult, world: World) -> EvidenceRecall:
    """The model's run ``result`` against the reference agent on its question and ``world``."""
    script = reference_script(result.query, world)
    contract = next(
        entry["content"]
        for entry in script
        if entry["stage"] == "executor" and isinstance(entry.get("content"), dict)
    )
    wanted = list(
        dict.fromkeys(
            binding["evidence_excerpt"]
            for claim in contract["claims"]
            if claim["claim_type"] == "observation"
            for binding in claim["evidence_bindings"]
        )
    )
    searched = {
        call["arguments"].get("service")
        for entry in script
        for call in entry.get("tool_calls") or []
        if call["arguments"].get("service")
    }
    texts = {row.id: _ref_texts(row.retrieval_details) for row in result.invocations}
    fetched = {text for refs in texts.values() for text in refs.values()}
    last = result.last_round
    cited = {
        texts.get(binding.source_invocation_id or 0, {}).get(binding.raw_path or "")
        for binding in (last.gatekeeper.checked_bindings if last is not None else [])
        if binding.status == "pass"
    }
    off_subject = sum(
        1
        for row in result.invocations
        if searched and row.input_params.get("service") not in (None, *searched)
    )
    return EvidenceRecall(
        reference=len(wanted),
        fetched=sum(text in fetched for text in wanted),
        cited=sum(text in cited for text in wanted),
        off_subject=off_subject,
        missed=tuple(text for text in wanted if text not in fetched),
    )


def _ref_texts(details: Any) -> dict[str, str]:
    refs = details.evidence_refs if details is not None else None
    return {ref.raw_path: ref.text for ref in refs or ()}
