"""The publication guards of a release, in figures: what each guard set aside or repaired, from the run's counts.

Every guard counts under a reason of its own in the stages' counts (:class:`~bitextflow.counts.StageCounts`), so
the figures are read from the counts a release is built with, the way ``stats.json`` and the datasheet read the
others: opt-outs (``optout_robots``, ``optout_tdmrep``, ``optout_noai``) and machine-translated pages
(``machine_translated``), counted by the crawl and extract stages; takedowns (``takedown_<kind>``), counted by the
gate, the release's monolingual corpus and document pairs, and a redaction; personal data (``personal_data_<type>``:
repaired when replaced, dropped when set aside). A guard no stage counted is shown as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bitextflow.config import PairConfig
from bitextflow.redaction.personal_data import PERSONAL_DATA_TYPES, phone_regions
from bitextflow.redaction.screen import PERSONAL_DATA_REASON
from bitextflow.redaction.takedowns import TAKEDOWN_KINDS

#: Reasons of the opt-out guards, with what each means (pages or documents set aside by the crawl and extract stages).
OPT_OUTS: dict[str, str] = {
    "optout_robots": "robots.txt disallows one of the honoured agents (AI-training agents included)",
    "optout_tdmrep": "a TDMRep text-and-data-mining reservation (header, meta, /.well-known/tdmrep.json)",
    "optout_noai": "a `noai` robots directive",
    "machine_translated": "the page's markup says it was machine translated",
}
_TAKEDOWN_MEANINGS = {
    "url": "its page is listed",
    "prefix": "its page is under a listed URL prefix",
    "host": "its page is on a listed host",
    "text": "its sentence is listed",
}
#: Reasons of the takedown guard, with what each means.
TAKEDOWNS: dict[str, str] = {f"takedown_{kind}": _TAKEDOWN_MEANINGS[kind] for kind in TAKEDOWN_KINDS}


def _by_stage(stage_counts: Iterable[Mapping[str, Any]], reason: str, field: str) -> dict[str, int]:
    found = {counts["stage"]: int(counts.get(field, {}).get(reason, 0)) for counts in stage_counts}
    return {stage: n for stage, n in found.items() if n}


def _figure(stage_counts: list[Mapping[str, Any]], reason: str, field: str = "dropped") -> dict[str, Any]:
    by_stage = _by_stage(stage_counts, reason, field)
    return {"total": sum(by_stage.values()), "by_stage": by_stage}


def guard_counts(stage_counts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``stats.json``'s ``guards``: per guard reason, its total and its count per stage (``stage_counts`` as
    ``StageCounts.to_dict``); personal data per type, replaced and dropped."""
    counts = list(stage_counts)
    return {
        "opt_outs": {reason: _figure(counts, reason) for reason in OPT_OUTS},
        "takedowns": {reason: _figure(counts, reason) for reason in TAKEDOWNS},
        "personal_data": {
            kind: {
                "replaced": _figure(counts, PERSONAL_DATA_REASON + kind, "repaired"),
                "dropped": _figure(counts, PERSONAL_DATA_REASON + kind),
            }
            for kind in PERSONAL_DATA_TYPES
        },
    }


def _where(figure: Mapping[str, Any]) -> str:
    return ", ".join(f"{stage} {n}" for stage, n in figure["by_stage"].items()) or "-"


def guards_section(stats: Mapping[str, Any], config: PairConfig) -> list[str]:
    """The datasheet's section on the publication guards, as Markdown lines: each guard with its counts (``stats``:
    ``stats.json``), never the text it removed, and what ``config`` looked for."""
    guards = stats.get("guards") or guard_counts(stats.get("stage_counts", []))
    lines = [
        "## Publication guards",
        "",
        "What was set aside or changed so that this corpus may be published, counted by the stage that did it "
        "(crawl and extract count pages or documents, the gate and a redaction sentence pairs, "
        "`release_monolingual` monolingual sentences, `release_document_pairs` document pairs). "
        "Counts only: the removed text is not kept here.",
        "",
        "| guard | reason | set aside | where |",
        "|---|---|---|---|",
    ]
    for reason, meaning in OPT_OUTS.items():
        figure = guards["opt_outs"][reason]
        lines.append(f"| opt-out | `{reason}`: {meaning} | {figure['total']} | {_where(figure)} |")
    for reason, meaning in TAKEDOWNS.items():
        figure = guards["takedowns"][reason]
        lines.append(f"| takedown | `{reason}`: {meaning} | {figure['total']} | {_where(figure)} |")
    lines.extend(["", "Personal data (values replaced by typed placeholders such as `[EMAIL_1]`, or items set aside):", ""])
    lines.extend(["| type | replaced in | where | set aside | where |", "|---|---|---|---|---|"])
    for kind, figures in guards["personal_data"].items():
        replaced, dropped = figures["replaced"], figures["dropped"]
        lines.append(f"| {kind} | {replaced['total']} | {_where(replaced)} | {dropped['total']} | {_where(dropped)} |")
    settings = config.personal_data
    regions = ", ".join(phone_regions((config.source, config.target), settings.phone_regions))
    lines.extend(
        [
            "",
            f"Looked for: {', '.join(settings.types) or 'nothing'} (action `{settings.action}`; phone numbers in the "
            f"national formats of {regions} and in international format). Person names are not looked for: that needs "
            "a named-entity model, and none is installed.",
        ]
    )
    redaction = stats.get("redaction")
    if redaction:
        whys = ", ".join(f"{why} {n}" for why, n in redaction["removed_by_why"].items()) or "none"
        lines.extend(
            [
                "",
                f"This version is v{redaction['source_version']} redacted (published in `release.json`'s `created`): "
                f"{redaction['removed_sentence_pairs']} sentence pairs removed (by the grounds of the requests: {whys}), "
                f"under a takedown list of {redaction['takedown_entries']} entries (SHA-256 `{redaction['takedown_list_sha256']}`).",
            ]
        )
        if not redaction.get("monolingual_traced"):
            lines.append(
                "The run's sentences were no longer in the store: a monolingual sentence of a listed page was removed "
                "where it is also a sentence of a removed pair; others of that page may remain."
            )
    lines.append("")
    return lines
