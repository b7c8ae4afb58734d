"""claim_points: a claim's points decided from its items' fields (docs/points.md).

The first table decides single points on written items; the second runs whole claims of the
soundness session through the real gatekeeper and ``claim_ceilings``.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from pytest_diageval.core.contract.contracts import EvidencePoint
from pytest_diageval.core.judge.claim_points import check_point
from pytest_diageval.core.judge.claim_support import claim_ceilings
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from support.citations import ALERT, FORGED, LOG, NEG, NO_HIT, RUNBOOK, claim_data, make_contract
from support.soundness_cases import SESSION, TEMPLATE

ALERT_ITEM = {
    "alert_name": "SlowResponse",
    "service": "user-service",
    "state": "firing",
    "severity": "warning",
    "current": "P99 4.2s",
    "threshold": "P99 3s",
    "duration": "10m",
    "description": "JVM heap 3.5GB/4GB, 17 threads waiting",
    "apis": ["/api/v1/users/profile", "/api/v1/users/orders"],
    "latency": "P95 2.1s, P99 4.2s",
    "errors": "HTTP 503 for 58 of 740 lookups",
    "opened": "2026-08-12T15:20:44+05:30",
}
LOG_ITEM = {
    "timestamp": "2026-07-08T11:02:00+08:00",
    "level": "WARN",
    "service": "order-service",
    "message": "内存使用率过高: 86.2%, JVM堆内存: 3.5GB/4GB, GC次数: 97",
}
ITEMS: dict[int, Any] = {1: ALERT_ITEM, 2: LOG_ITEM, 3: None}

POINTS = [
    # (binding, field, relation, value, other_field, expected rule or None)
    (1, "state", "equals", "FIRING", None, None),
    (1, "state", "equals", "resolved", None, "point.false"),
    (1, "current", "equals", "4200ms", None, None),
    (1, "current", "equals", "4.2", None, "point.false"),
    (1, "current", "above", None, "threshold", None),
    (1, "threshold", "above", None, "current", "point.false"),
    (1, "current", "at_least", "4.2 秒", None, None),
    (1, "current", "above", "4.2s", None, "point.false"),
    (1, "current", "below", "5000 毫秒", None, None),
    (1, "duration", "at_most", "10 分钟", None, None),
    (1, "duration", "above", "1h", None, "point.false"),
    (1, "current", "above", "80%", None, "point.not_comparable"),
    (1, "description", "above", "3GB", None, None),  # 3.5GB/4GB counts its first part
    (1, "description", "contains", "3584MB", None, None),
    (1, "description", "contains", "heap", None, None),
    (1, "duration", "contains", "0m", None, "point.false"),  # not a piece of 10m
    (1, "latency", "contains", "2.1s", None, None),
    (1, "latency", "contains", "1s", None, "point.false"),  # 2.1s is not 1s
    (1, "description", "contains", "h", None, "point.not_comparable"),
    (1, "description", "contains", "Full GC", None, "point.false"),
    (1, "apis", "equals", "/api/v1/users/orders", None, None),
    (1, "apis", "equals", "/api/v1/users", None, "point.false"),
    (1, "state", "equals", "firing", "severity", "point.not_comparable"),
    (1, "state", "equals", None, None, "point.not_comparable"),
    (1, "state", "is", "firing", None, "point.not_comparable"),
    (1, "latency", "above", "1s", None, "point.not_comparable"),  # two durations: which?
    (1, "latency", "contains", "4200ms", None, None),
    (1, "errors", "above", "50", None, "point.not_comparable"),  # 58 and 740: which count?
    (1, "opened", "equals", "2026-08-12 09:50:44 UTC", None, None),  # a half-hour zone
    (1, "opened", "equals", "2026-08-12 04:50:44 -05:00", None, None),  # offset after a space
    (1, "opened", "before", "2026-08-12 09:51 UTC", None, None),
    (1, "opened", "after", "15:21", None, "point.false"),  # read in the field's zone
    (1, "opened", "equals", "04:50:44 -05:00", None, None),  # no date: the field's, moved
    (1, "opened", "before", "09:51 +00:00", None, None),  # no seconds, offset after a space
    (2, "message", "equals", "3584MB", None, None),  # the one size (3.5GB/4GB's first part)
    (1, "latency", "equals", "4.2s", None, "point.not_comparable"),  # two durations
    (1, "owner", "equals", "team-a", None, "point.field_missing"),
    (1, "current", "above", None, "baseline", "point.field_missing"),
    (2, "timestamp", "equals", "2026-07-08 03:02 UTC", None, None),
    (2, "timestamp", "equals", "11:02", None, None),
    (2, "timestamp", "equals", "11:03", None, "point.false"),
    (2, "timestamp", "after", "2026-07-08T02:59:00Z", None, None),
    (2, "timestamp", "before", "10:30", None, "point.false"),
    (2, "message", "above", "85%", None, None),
    (2, "message", "above", "90", None, None),  # GC次数: 97 is the one plain count
    (2, "message", "equals", "内存使用率过高", None, "point.false"),
    (3, "state", "equals", "firing", None, "point.binding_missing"),
    (4, "state", "equals", "firing", None, "point.binding_missing"),
]


@pytest.mark.parametrize(
    ("binding", "field", "relation", "value", "other", "rule"),
    POINTS,
    ids=[f"{row[0]}-{row[1]}-{row[2]}-{row[3] or row[4]}" for row in POINTS],
)
def test_a_point_is_decided_from_the_items_fields(
    binding: int, field: str, relation: str, value: str | None, other: str | None, rule: str | None
) -> None:
    point = EvidencePoint(
        binding=binding, field=field, relation=relation, value=value, other_field=other
    )
    found = check_point(point, ITEMS)
    assert found.rule == rule, found.reason
    assert found.holds is (rule is None)


def _ceiling(claim: dict[str, Any]) -> Any:
    """claim-1's ceiling, its contract checked by the real gatekeeper on the soundness session."""
    contract = make_contract(claim)
    gatekeeper = Gatekeeper(TEMPLATE.store).check(contract, SESSION)
    found = claim_ceilings(contract.claims, gatekeeper, TEMPLATE.store.list_invocations(SESSION))
    return found["claim-1"]


def _point(field: str, relation: str, value: str | None = None, **more: Any) -> dict[str, Any]:
    return {"binding": more.pop("binding", 1), "field": field, "relation": relation,
            "value": value, **more}  # fmt: skip


WRONG_TEXT = "order-service 的 HighMemoryUsage 告警已恢复，内存只有 50%。"
CEILINGS = [
    (
        "true points, a text that says otherwise: the text is not read",
        claim_data(
            WRONG_TEXT,
            [ALERT],
            points=[
                _point("state", "equals", "firing"),
                _point("current", "above", other_field="threshold"),
            ],
        ),
        "direct_evidence",
        None,
    ),
    (
        "a false point",
        claim_data(WRONG_TEXT, [ALERT], points=[_point("current", "below", "50%")]),
        "no_evidence",
        "point.false",
    ),
    (
        "a point on a binding the gatekeeper refused",
        claim_data(WRONG_TEXT, [FORGED, LOG], points=[_point("state", "equals", "firing")]),
        "no_evidence",
        "point.binding_missing",
    ),
    (
        "a point on a field the item lacks",
        claim_data(WRONG_TEXT, [ALERT], points=[_point("owner", "equals", "sre")]),
        "no_evidence",
        "point.field_missing",
    ),
    (
        "a log point and an alert point: two items",
        claim_data(
            WRONG_TEXT,
            [ALERT, LOG],
            points=[
                _point("state", "equals", "firing"),
                _point("message", "contains", "3.8GB", binding=2),
            ],
        ),
        "direct_evidence",
        None,
    ),
    (
        "a root cause over two items is indirect at most",
        claim_data(
            WRONG_TEXT,
            [ALERT, LOG],
            claim_type="root_cause",
            points=[
                _point("state", "equals", "firing"),
                _point("message", "contains", "3.8GB", binding=2),
            ],
        ),
        "indirect_support",
        "claim.causal_across_items",
    ),
    (
        "a root cause on one item",
        claim_data(
            WRONG_TEXT,
            [ALERT],
            claim_type="root_cause",
            points=[
                _point("state", "equals", "firing"),
                _point("current", "above", other_field="threshold"),
            ],
        ),
        "direct_evidence",
        None,
    ),
    (
        "a runbook binding caps at indirect",
        claim_data(WRONG_TEXT, [ALERT, RUNBOOK], points=[_point("state", "equals", "firing")]),
        "indirect_support",
        "claim.runbook_binding",
    ),
    (
        "a negative observation on its no-hit's arguments",
        claim_data(
            WRONG_TEXT,
            [NO_HIT],
            claim_type=NEG,
            points=[
                _point("service", "equals", "inventory-service"),
                _point("results", "equals", "0"),
            ],
        ),
        "direct_evidence",
        None,
    ),
    (
        "a negative observation naming another service than its no-hit searched",
        claim_data(
            WRONG_TEXT,
            [NO_HIT],
            claim_type=NEG,
            points=[
                _point("service", "equals", "order-service"),
            ],
        ),
        "no_evidence",
        "point.false",
    ),
    (
        "a negative observation without a no-hit",
        claim_data(
            WRONG_TEXT,
            [ALERT],
            claim_type=NEG,
            points=[
                _point("state", "equals", "firing"),
            ],
        ),
        "no_evidence",
        "claim.negative_without_no_hit",
    ),
    (
        "an observation resting only on a no-hit",
        claim_data(WRONG_TEXT, [NO_HIT], points=[_point("results", "equals", "0")]),
        "no_evidence",
        "claim.no_hit_not_support",
    ),
    (
        "true points under support_level indirect",
        claim_data(
            WRONG_TEXT,
            [ALERT],
            support_level="indirect",
            points=[
                _point("state", "equals", "firing"),
            ],
        ),
        "indirect_support",
        "claim.support_level",
    ),
]


@pytest.mark.parametrize(
    ("case", "claim", "ceiling", "rule"), CEILINGS, ids=[row[0] for row in CEILINGS]
)
def test_a_claim_with_points_is_judged_by_them(
    case: str, claim: dict[str, Any], ceiling: str, rule: str | None
) -> None:
    result = _ceiling(claim)
    assert (result.ceiling, result.rule) == (ceiling, rule), (case, result.reason)


def test_the_same_text_without_points_is_read_and_refused() -> None:
    """The contrast the design rests on: the claim text above, read as prose, is refused."""
    result = _ceiling(claim_data(WRONG_TEXT, [ALERT]))
    assert result.ceiling == "no_evidence"
    assert (result.rule or "").startswith("claim.")


def test_a_number_as_value_is_its_text_and_a_boolean_fails() -> None:
    """A model (or a YAML file) may write ``value: 0``: the text "0"; ``true`` is no value."""
    point = EvidencePoint.model_validate(
        {"binding": 1, "field": "results", "relation": "equals", "value": 0}
    )
    assert point.value == "0"
    assert EvidencePoint.model_validate({**point.model_dump(), "value": 4.5}).value == "4.5"
    with pytest.raises(ValidationError):
        EvidencePoint.model_validate({**point.model_dump(), "value": True})
