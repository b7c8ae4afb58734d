"""Every fixed text of an answer, in the question's language (Chinese or English).

An answer is made of these texts and of evidence rendered by code (:mod:`.confirmed`); the
language is the question's (:func:`wording_for`: a question with a CJK character is answered
in Chinese, any other in English). Adding a language is adding one :class:`Wording`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["EN", "ZH", "Wording", "wording_for"]

_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Wording:
    """The fixed texts of one language."""

    language: Literal["zh", "en"]
    disclaimer: str
    degraded_header: str
    confirmed_heading: str
    """Above the rendered evidence of a PASS (and the findings of a LOW_CONFID)."""
    confirmed_facts_heading: str
    """Above the directly supported evidence of a REJECT."""
    no_hit_heading: str
    knowledge_heading: str
    evidence_gaps_heading: str
    next_steps_heading: str
    no_findings: str
    no_facts_after_gatekeeper_reject: str
    no_gaps: str
    verifier_fallback_notice: str
    no_direct_answer: str
    claim_gap: str
    """``{code_id}`` and ``{claim_type}`` (the executor's label, as a fixed word)."""
    fact_gap: str
    no_claim_in_scope_gap: str
    left_out_claims: str
    withheld_items: str
    zone_note: str
    fallback_next_steps: tuple[str, ...]
    claim_types: Mapping[str, str]
    """The executor's type label (a closed enum) -> the word printed; an unknown one is
    never printed."""
    states: Mapping[str, str]
    alert: str
    log: str
    severity: str
    current: str
    threshold: str
    duration: str
    samples: str
    apis: str
    all_services: str
    colon: str
    comma: str
    list_separator: str
    source_word: str
    source_separator: str
    quote_open: str
    quote_close: str
    title_open: str
    title_close: str
    no_hit_texts: Mapping[str, str] = field(default_factory=dict)

    def source_tag(self, sources: str) -> str:
        return (
            f"（{self.source_word}：{sources}）"
            if self.language == "zh"
            else (f"({self.source_word}: {sources})")
        )

    def quoted(self, terms: Sequence[str]) -> str:
        return self.list_separator.join(f"{self.quote_open}{t}{self.quote_close}" for t in terms)

    def quote_title(self, title: str) -> str:
        return f"{self.title_open}{title}{self.title_close}"

    def no_hit_knowledge(self, query: str) -> str:
        return self.no_hit_texts["knowledge"].format(query=self.quoted([query]) if query else "")

    def no_hit(
        self,
        where: Literal["logs", "alerts"],
        *,
        service: str | None,
        alert_name: str | None,
        keywords: Sequence[str],
        level: str | None,
    ) -> str:
        """A search of ``where`` that found nothing, from the search's own arguments."""
        texts = self.no_hit_texts
        scope = texts["service"].format(service=service) if service else texts["every_service"]
        terms = []
        if alert_name:
            terms.append(texts["alert_name"].format(name=self.quoted([alert_name])))
        if keywords:
            terms.append(texts["keywords"].format(keywords=self.quoted(keywords)))
        if level:
            terms.append(texts["level"].format(level=level))
        searched = self.list_separator.join(terms) if terms else texts["anything"]
        return texts["search"].format(scope=scope, where=texts[where], searched=searched)


ZH = Wording(
    language="zh",
    disclaimer="【低置信度提示】以下结论未能全部得到工具证据支持，请谨慎参考。",
    degraded_header=(
        "【无法可靠回答】现有工具证据不足以可靠回答该问题。"
        "以下仅列出经证据直接确认的事实、证据缺口和建议的下一步取证动作。"
    ),
    confirmed_heading="已确认（以下由工具返回的证据逐条呈现，不含模型措辞）：",
    no_hit_heading="未检索到真实证据（以下检索均无结果）：",
    confirmed_facts_heading="已确认的事实（工具证据原文）：",
    knowledge_heading="参考知识（排查手册，不是本次事件的已确认事实）：",
    evidence_gaps_heading="证据缺口：",
    next_steps_heading="下一步建议（仅限补充取证）：",
    no_findings="（暂无经核验确认的发现。）",
    no_facts_after_gatekeeper_reject="（执行器引用的证据未能通过核验，本次不展示任何结论。）",
    no_gaps="（核验未列出具体的证据缺口。）",
    verifier_fallback_notice="（核验步骤未能完成，本次回答中的任何结论都未经核验。）",
    no_direct_answer="（执行器未给出可展示的回答。）",
    claim_gap="{code_id}（{claim_type}）缺少工具证据",
    fact_gap="核验列出的一条声明之外的事实缺少工具证据",
    no_claim_in_scope_gap="执行器的声明都超出了问题的范围，问题范围内的事实没有工具证据",
    left_out_claims="未通过核验、未列入的声明：{ids}。",
    withheld_items="另有 {count} 条被引用的证据原文含机器格式，未予展示（见审计记录）。",
    zone_note="（时间均为 UTC{offset}）",
    fallback_next_steps=(
        "重新查询相关服务当前的告警与监控指标，确认告警状态与数值。",
        "检索相关服务在告警时间窗口内的错误与警告日志。",
        "查阅知识库中对应告警的排查手册，确认还需要收集哪些证据。",
    ),
    claim_types={t: t for t in ("observation", "negative_observation", "root_cause", "risk")},
    states={"firing": "触发中", "resolved": "已恢复", "pending": "待触发"},
    alert="告警",
    log="日志",
    severity="级别",
    current="当前",
    threshold="阈值",
    duration="持续",
    samples="采样",
    apis="接口",
    all_services="所有服务",
    colon="：",
    comma="，",
    list_separator="、",
    source_word="来源",
    source_separator="；",
    quote_open="「",
    quote_close="」",
    title_open="手册《",
    title_close="》",
    no_hit_texts={
        "search": "在{scope}的{where}中检索{searched}：无结果",
        "service": " {service} ",
        "every_service": "所有服务",
        "logs": "日志",
        "alerts": "告警",
        "alert_name": "告警名{name}",
        "keywords": "关键词{keywords}",
        "level": "级别 {level}",
        "anything": "全部",
        "knowledge": "在知识库中检索{query}：无结果",
    },
)

EN = Wording(
    language="en",
    disclaimer="[Low confidence] Not every conclusion below is backed by tool evidence.",
    degraded_header=(
        "[No reliable answer] The tool evidence is not enough to answer this question."
        " Below are only the facts the evidence confirms directly, the evidence gaps and the"
        " next evidence-gathering steps."
    ),
    confirmed_heading="Confirmed (the evidence as the tools returned it, item by item):",
    no_hit_heading="No evidence found (these searches returned nothing):",
    confirmed_facts_heading="Confirmed facts (tool evidence, verbatim):",
    knowledge_heading="Reference knowledge (runbooks, not confirmed facts of this incident):",
    evidence_gaps_heading="Evidence gaps:",
    next_steps_heading="Next steps (evidence gathering only):",
    no_findings="(No finding was confirmed by the evidence.)",
    no_facts_after_gatekeeper_reject=(
        "(The evidence the executor cited did not pass the checks; no conclusion is shown.)"
    ),
    no_gaps="(The checks listed no specific evidence gap.)",
    verifier_fallback_notice="(The verification step did not complete: nothing here is verified.)",
    no_direct_answer="(The executor gave no answer that can be shown.)",
    claim_gap="{code_id} ({claim_type}) has no tool evidence",
    fact_gap="A fact outside the claims has no tool evidence",
    no_claim_in_scope_gap=(
        "Every claim of the executor is outside the question's scope; nothing in scope has"
        " tool evidence"
    ),
    left_out_claims="Claims left out (not verified): {ids}.",
    withheld_items=(
        "{count} cited item(s) not shown: their text looks like raw machine output (see the audit)."
    ),
    zone_note="(times in UTC{offset})",
    fallback_next_steps=(
        "Query the current alerts and metrics of the services involved again.",
        "Search the error and warning logs of those services in the alert's time window.",
        "Read the runbook of the alert to see which evidence is still missing.",
    ),
    claim_types={t: t for t in ("observation", "negative_observation", "root_cause", "risk")},
    states={},
    alert="Alert",
    log="Log",
    severity="severity",
    current="current",
    threshold="threshold",
    duration="for",
    samples="samples",
    apis="APIs",
    all_services="All services",
    colon=": ",
    comma=", ",
    list_separator=", ",
    source_word="source",
    source_separator="; ",
    quote_open='"',
    quote_close='"',
    title_open='Runbook "',
    title_close='"',
    no_hit_texts={
        "search": "Searched the {where} of {scope} for {searched}: no results",
        "service": "{service}",
        "every_service": "every service",
        "logs": "logs",
        "alerts": "alerts",
        "alert_name": "alert {name}",
        "keywords": "keywords {keywords}",
        "level": "level {level}",
        "anything": "anything",
        "knowledge": "Searched the knowledge base for {query}: no results",
    },
)


def wording_for(question: str) -> Wording:
    """Chinese for a question with a CJK character (or none at all), English otherwise."""
    if not question.strip() or _CJK_RE.search(question):
        return ZH
    return EN
