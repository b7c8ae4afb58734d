"""The gatekeeper's rules: their public names (what scenarios and auditors match on), described.

Each rule's grade is its row in :mod:`pytest_diageval.core.contract.rules`; the code reads it there.

Reject grade (fabrication or contamination):

* ``evidence.invocation_ref``: the invocation id does not exist, or belongs to another session;
* ``evidence.tool_mismatch``: the id exists but its real tool differs from ``tool_name``;
* ``evidence.raw_path``: the raw path is not among that invocation's ``evidence_refs``; a
  malformed path (anything but ``$.alerts[i]``, ``$.logs[i]``, ``$.evidence_blocks[i]``, or
  the collection path of a no-hit search, below) fails here too, its message listing the
  allowed forms; so does a collection path cited on a call that did find something, or failed;
* ``evidence.excerpt_mismatch``: the excerpt is not supported by that ref's ``text``
  (``core.judge.excerpt_match``); a changed number or a flipped negation fails here however short
  the quote is.

The collection path (extension): a completed search that found nothing has no item to cite,
so a ``negative_observation`` quotes the empty result itself: ``$.logs`` of a ``query_logs``
no-hit, ``$.alerts`` of a ``query_metrics`` no-hit (:data:`NO_HIT_RAW_PATHS`). The row passes
with the system's description of the empty search as ``matched_text``; an excerpt, when given,
must be supported by that description. Which claim such a citation can support is decided by
:mod:`pytest_diageval.core.judge.claim_support` (a negative observation about what was searched).

Low-confidence grade (missing or incomplete, but nothing forged):

* ``evidence.bindings_empty``: a claim with support_level direct or indirect and no bindings
  (one row with the claim id and no binding fields);
* ``evidence.raw_path_missing``: an id but no raw path (the excerpt is then not compared:
  without a path there is no ref to compare it with, and the path is never guessed);
* ``evidence.refs_unavailable``: the invocation row has no ``evidence_refs`` (legacy row);
* ``evidence.excerpt_too_short``: the excerpt is below the minimum comparable length, or
  generic: only the item's metadata (timestamp, log level, service, alert state) is quoted;
* ``evidence.excerpt_missing`` (extension): id and path are real but there is no excerpt,
  so nothing was quoted; a gap, not a forgery, hence not ``excerpt_too_short`` (that one
  says a quote exists but is too short to compare);
* ``evidence.invocation_missing`` (extension): no ``source_invocation_id`` and no backfill
  possible (zero or several invocations of its ``tool_name``), or only a legacy list
  of several ids (each must still exist in this session, else ``evidence.invocation_ref``);
* ``evidence.instruction_like`` (extension): id, path and excerpt are real, but the cited
  item reads as an instruction to the model (忽略以上指令, "ignore previous instructions",
  直接输出 PASS, a JSON contract or verdict inside a log line, a data-wrapper tag …; the
  signals and the normalisation are listed in :mod:`~pytest_diageval.core.judge.instruction_like`).
  The whole cited item is screened, not only the quoted span: an innocent quote from a line
  that gives orders still rests on that line. Evidence is data, so such a binding never
  carries a PASS; it is a gap in trust, not a forgery, hence low_confid and not reject;
* ``evidence.invocation_auto_backfill``: the id was auto-filled and everything else checked
  out; a backfilled binding can never carry a PASS;
* ``executor.parse_failed``: the executor output could not be parsed into the contract, so
  no citation can be checked;
* ``executor.claims_empty`` (extension): the contract has no claims, so nothing its answer
  says is bound to evidence (one row without claim or binding fields).
"""

from __future__ import annotations

from pytest_diageval.core.contract.evidence_tools import EVIDENCE_TOOL_TABLE
from pytest_diageval.core.contract.rules import RULES

__all__ = [
    "ALLOWED_RAW_PATH_FORMS",
    "AUTO_BACKFILL",
    "BINDINGS_EMPTY",
    "CLAIMS_EMPTY",
    "EXCERPT_MISMATCH",
    "EXCERPT_MISSING",
    "EXCERPT_TOO_SHORT",
    "INSTRUCTION_LIKE",
    "INVOCATION_MISSING",
    "INVOCATION_REF",
    "LOW_CONFID_RULES",
    "NO_HIT_RAW_PATHS",
    "PARSE_FAILED_RULE",
    "RAW_PATH",
    "RAW_PATH_MISSING",
    "REFS_UNAVAILABLE",
    "REJECT_RULES",
    "TOOL_MISMATCH",
]

ALLOWED_RAW_PATH_FORMS = tuple(tool.raw_path_form for tool in EVIDENCE_TOOL_TABLE)
NO_HIT_RAW_PATHS: dict[str, str] = {tool.name: tool.no_hit_path for tool in EVIDENCE_TOOL_TABLE}
"""The collection path that quotes a completed search's empty result, per tool."""
PARSE_FAILED_RULE = "executor.parse_failed"
CLAIMS_EMPTY = "executor.claims_empty"

INVOCATION_REF = "evidence.invocation_ref"
TOOL_MISMATCH = "evidence.tool_mismatch"
RAW_PATH = "evidence.raw_path"
EXCERPT_MISMATCH = "evidence.excerpt_mismatch"
BINDINGS_EMPTY = "evidence.bindings_empty"
RAW_PATH_MISSING = "evidence.raw_path_missing"
REFS_UNAVAILABLE = "evidence.refs_unavailable"
EXCERPT_TOO_SHORT = "evidence.excerpt_too_short"
EXCERPT_MISSING = "evidence.excerpt_missing"
INVOCATION_MISSING = "evidence.invocation_missing"
AUTO_BACKFILL = "evidence.invocation_auto_backfill"
INSTRUCTION_LIKE = "evidence.instruction_like"

REJECT_RULES = frozenset(r.name for r in RULES if r.family == "gatekeeper" and r.grade == "reject")
LOW_CONFID_RULES = frozenset(
    r.name for r in RULES if r.family == "gatekeeper" and r.grade == "low_confid"
)
