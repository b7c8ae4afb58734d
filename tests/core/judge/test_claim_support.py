"""claim_support: one row per ceiling rule, each from a real gatekeeper result.

The contracts cite the session of ``support.soundness_cases`` (see ``support.citations``).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from pytest_diageval.core.judge.claim_support import claim_ceilings, label_rank
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from support.citations import (
    ALERT,
    FORGED,
    LOG,
    MEMORY,
    NEG,
    NEG_INVENTORY,
    NEG_INVENTORY_GC,
    NEG_ORDER,
    NO_HIT,
    POS_INVENTORY,
    RUNBOOK,
    claim_data,
    make_contract,
)
from support.soundness_cases import SESSION, TEMPLATE

CEILINGS = [
    (
        "incident bindings that passed",
        claim_data(MEMORY, [ALERT, LOG]),
        "direct_evidence",
        None,
        False,
        [1, 2],
    ),
    (
        "no bindings, support_level direct",
        claim_data(MEMORY, []),
        "no_evidence",
        "claim.no_bindings",
        False,
        [],
    ),
    (
        "no bindings, support_level none",
        claim_data(MEMORY, [], support_level="none"),
        "no_evidence",
        "claim.no_bindings",
        False,
        [],
    ),
    (
        "every binding failed",
        claim_data(MEMORY, [FORGED]),
        "no_evidence",
        "claim.bindings_failed",
        False,
        [],
    ),
    (
        "a runbook binding next to an incident one",
        claim_data(MEMORY, [ALERT, RUNBOOK]),
        "indirect_support",
        "claim.runbook_binding",
        True,
        [1, 3],
    ),
    (
        "order-service evidence for an inventory-service claim",
        claim_data(MEMORY.replace("order-service", "inventory-service"), [ALERT, LOG]),
        "no_evidence",
        "claim.subject_not_cited",
        False,
        [1, 2],
    ),
    (
        "a runbook binding alone, stating the incident's numbers",
        claim_data(MEMORY, [RUNBOOK], claim_type="root_cause"),
        "no_evidence",
        "claim.number_not_cited",
        True,
        [3],
    ),
    (
        "a positive claim citing only a no-hit",
        claim_data(POS_INVENTORY, [NO_HIT]),
        "no_evidence",
        "claim.no_hit_not_support",
        False,
        [4],
    ),
    (
        "a negative claim citing a hit, no no-hit",
        claim_data(NEG_INVENTORY, [ALERT], claim_type=NEG),
        "no_evidence",
        "claim.negative_without_no_hit",
        False,
        [1],
    ),
    (
        "a negative claim on the no-hit of what it names",
        claim_data(NEG_INVENTORY, [NO_HIT], claim_type=NEG),
        "direct_evidence",
        None,
        False,
        [4],
    ),
    (
        "a negative claim on another service's no-hit",
        claim_data(NEG_ORDER, [NO_HIT], claim_type=NEG),
        "no_evidence",
        "claim.negative_subject",
        False,
        [4],
    ),
    (
        "a negative claim on another keyword's no-hit",
        claim_data(NEG_INVENTORY_GC, [NO_HIT], claim_type=NEG),
        "no_evidence",
        "claim.negative_subject",
        False,
        [4],
    ),
    (
        "support_level indirect lowers a direct ceiling",
        claim_data(MEMORY, [ALERT], support_level="indirect"),
        "indirect_support",
        "claim.support_level",
        False,
        [1],
    ),
    (
        "support_level none lowers a direct ceiling",
        claim_data(MEMORY, [ALERT], support_level="none"),
        "no_evidence",
        "claim.support_level",
        False,
        [1],
    ),
]


@pytest.mark.parametrize(
    ("case", "claim", "ceiling", "rule", "runbook", "bound"),
    CEILINGS,
    ids=[row[0] for row in CEILINGS],
)
def test_claim_ceiling_table(
    case: str,
    claim: dict[str, Any],
    ceiling: str,
    rule: str | None,
    runbook: bool,
    bound: list[int],
) -> None:
    contract = make_contract(claim)
    gatekeeper = Gatekeeper(TEMPLATE.store).check(contract, SESSION)
    found = claim_ceilings(contract.claims, gatekeeper, TEMPLATE.store.list_invocations(SESSION))
    result = found["claim-1"]
    assert (result.ceiling, result.rule, result.runbook) == (ceiling, rule, runbook), case
    assert result.bound_invocation_ids == bound


def test_a_contract_never_repeats_a_claim_id() -> None:
    """Claims are judged by id: a second claim under an id would hide behind the first, so
    the contract refuses it (the executor output then counts as unparsed)."""
    with pytest.raises(ValidationError, match="claim_id must be unique; repeated: claim-1"):
        make_contract(claim_data(MEMORY, [ALERT]), claim_data(MEMORY, []))


def test_label_rank_orders_contradicted_below_everything() -> None:
    labels = ["direct_evidence", "no_evidence", "contradicted", "indirect_support"]
    assert sorted(labels, key=label_rank) == [
        "contradicted",
        "no_evidence",
        "indirect_support",
        "direct_evidence",
    ]
