"""claim_support: one row per ceiling rule, each from a real gatekeeper result.

The contracts cite the session of ``support.soundness_cases`` (see ``support.citations``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.core.claim_support import claim_ceilings, label_rank
from pytest_diageval.core.gatekeeper import Gatekeeper
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
        "a runbook binding alone",
        claim_data(MEMORY, [RUNBOOK], claim_type="root_cause"),
        "indirect_support",
        "claim.runbook_binding",
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


def test_the_first_claim_of_a_repeated_id_sets_the_ceiling() -> None:
    contract = make_contract(claim_data(MEMORY, [ALERT]), claim_data(MEMORY, []))
    gatekeeper = Gatekeeper(TEMPLATE.store).check(contract, SESSION)
    found = claim_ceilings(contract.claims, gatekeeper, TEMPLATE.store.list_invocations(SESSION))
    assert list(found) == ["claim-1"]
    assert found["claim-1"].ceiling == "direct_evidence"


def test_label_rank_orders_contradicted_below_everything() -> None:
    labels = ["direct_evidence", "no_evidence", "contradicted", "indirect_support"]
    assert sorted(labels, key=label_rank) == [
        "contradicted",
        "no_evidence",
        "indirect_support",
        "direct_evidence",
    ]
