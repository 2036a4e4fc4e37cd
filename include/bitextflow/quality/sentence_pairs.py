"""The sentence-pair gate: suites run on the pairs of every site partition, then on the run, before release.

The thresholds come from :class:`~bitextflow.config.GateConfig`. Each partition's pairs (suite
``sentence_pairs.part-NNNNN``) must have:

- the sentence-pair columns (extra columns are allowed: later stages add scores);
- no nulls in ``url_a``, ``url_b``, ``text_a``, ``text_b``, ``alignment_score``, ``domain_relevance`` and
  ``pair_hash`` (a null score would pass the range check silently, a null hash would escape the duplicate
  check); a non-whitespace character in ``text_a`` and ``text_b``;
- ``alignment_score``, ``domain_relevance`` and, where a scorer wrote them, the optional score columns
  (:data:`OPTIONAL_SCORE_COLUMNS`) in [0, 1]; ``lang_a`` / ``lang_b`` equal to the pair's languages;
- a length ratio (Latin-character equivalents) longer/shorter side (helper column ``length_ratio``) of at most
  ``gate.max_length_ratio``.

The run as a whole (suite ``sentence_pairs``, one row of figures summed over the partitions,
:class:`PairsSummary`) must have:

- at most ``gate.max_other_language_share`` of each side's sentences that CLD2 is sure are in another
  language (helper columns ``other_language_a/b``: the detected language, null elsewhere);
- at most ``gate.max_duplicate_share`` of rows whose ``pair_hash`` occurred earlier (helper column
  ``repeated_pair_hash``: the hash on repeats, null elsewhere);
- at least ``gate.min_sentence_pairs`` rows and, when the pair has an earlier release, a row count within
  ``gate.max_volume_drop`` / ``gate.max_volume_growth`` of that release's (a sudden drop or spike means a
  broken site, extractor or threshold, not a better corpus); at least ``gate.min_document_pairs`` document
  pairs (none means the crawl found no translated pages: check seeds and ``crawl.max_pages``).

Shares are judged on the run because a partition of a few pairs would fail on one odd sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from bitextflow.config import GateConfig
from bitextflow.quality.engine import Check
from bitextflow.text.languages import cld2, cld2_languages, one_language
from bitextflow.text.lengths import weighted_length
from bitextflow.text.scripts import base_language

SENTENCE_PAIR_COLUMNS: tuple[str, ...] = (
    "url_a", "url_b", "lang_a", "lang_b", "text_a", "text_b", "alignment_score",
    "rule_tags", "domain_relevance", "domain_terms", "pair_hash",
)  # fmt: skip
"""Columns every sentence-pair frame carries (the sentence-pair schema of :mod:`bitextflow.records`)."""

OPTIONAL_SCORE_COLUMNS: tuple[str, ...] = ("bicleaner_score", "margin_score")
"""Scores in [0, 1] that only some configurations write; checked when present."""

LENGTH_RATIO_COLUMN = "length_ratio"
REPEATED_HASH_COLUMN = "repeated_pair_hash"
OTHER_LANGUAGE_COLUMNS = {"text_a": "other_language_a", "text_b": "other_language_b"}
SUITE_NAME = "sentence_pairs"


def length_ratio(text_a: pd.Series, text_b: pd.Series) -> pd.Series:
    """Longer side over shorter side in Latin-character equivalents (:func:`~bitextflow.text.lengths.weighted_length`,
    the unit of the score stage's rule), per row.

    The shorter length is floored at 1 so an empty side gives a finite ratio (the emptiness has its
    own expectation); a ratio of infinity would also not survive JSON serialisation of the result.
    """
    len_a = text_a.fillna("").astype(str).map(weighted_length).astype(float)
    len_b = text_b.fillna("").astype(str).map(weighted_length).astype(float)
    longer = pd.concat([len_a, len_b], axis=1).max(axis=1)
    shorter = pd.concat([len_a, len_b], axis=1).min(axis=1).clip(lower=1)
    return (longer / shorter).astype(float)


def with_helper_columns(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with the helper columns the suite checks.

    A helper whose source column is missing is all-null (which its check ignores): the column-set
    expectation already reports the missing column, once.
    """
    frame = df.copy(deep=False)  # copy-on-write (pandas 3): the caller's frame is left as it was
    if {"text_a", "text_b"} <= set(frame.columns):
        frame[LENGTH_RATIO_COLUMN] = length_ratio(frame["text_a"], frame["text_b"])
    else:
        frame[LENGTH_RATIO_COLUMN] = float("nan")
    if "pair_hash" in frame.columns:
        hashes = frame["pair_hash"]
        frame[REPEATED_HASH_COLUMN] = hashes.where(hashes.notna() & hashes.duplicated(keep="first"))
    else:
        frame[REPEATED_HASH_COLUMN] = None
    for text_column, helper in OTHER_LANGUAGE_COLUMNS.items():
        lang_column = "lang_" + text_column[-1]
        if {text_column, lang_column} <= set(frame.columns):
            frame[helper] = [
                other_language(text, lang) for text, lang in zip(frame[text_column], frame[lang_column], strict=True)
            ]
        else:
            frame[helper] = None
    return frame


def other_language(text: object, expected: object) -> str | None:
    """The language CLD2 is sure ``text`` is in, when that is not ``expected``; None otherwise.

    Unsure detections count as agreeing: short technical sentences (commands, file names) are often
    unsure, and the gate is after whole sides in the wrong language, not after a misread command. A language CLD2
    cannot name (one heliport identified in extract) is never judged: CLD2 would call all of it another language. Nor
    is the script: a sentence is too short to tell them apart (most Chinese characters are Simplified and Traditional),
    so a page's script is extraction's to judge. Nor another language of a group no identifier tells apart
    (:data:`~bitextflow.text.languages.HELIPORT_CLUSTERS`): CLD2 was sure that 28 % of an en-hr release's Croatian
    sentences on GNOME's help were Bosnian or Serbian, and the gate failed the release.
    """
    if not isinstance(text, str) or not text.strip() or not isinstance(expected, str):
        return None
    if (language := base_language(expected)) not in cld2_languages():
        return None
    detected, reliable, _shares = cld2(text)
    return detected if reliable and not one_language(detected, language) else None


def volume_bounds(gate: GateConfig, previous_count: int | None) -> tuple[int, int | None]:
    """(min, max) rows the gate accepts: ``min_sentence_pairs``, narrowed by the previous release's count."""
    low, high = gate.min_sentence_pairs, None
    if previous_count:
        if gate.max_volume_drop is not None:
            low = max(low, math.ceil(previous_count * (1 - gate.max_volume_drop)))
        if gate.max_volume_growth is not None:
            high = math.floor(previous_count * (1 + gate.max_volume_growth))
    return low, high


@dataclass
class PairsSummary:
    """What the run-level suite judges, summed over the partitions' frames (with helper columns)."""

    sentence_pairs: int = 0
    repeated: int = 0
    other_language_a: int = 0
    other_language_b: int = 0

    def add(self, checked: pd.DataFrame) -> None:
        self.sentence_pairs += len(checked)
        self.repeated += int(checked[REPEATED_HASH_COLUMN].notna().sum())
        self.other_language_a += int(checked[OTHER_LANGUAGE_COLUMNS["text_a"]].notna().sum())
        self.other_language_b += int(checked[OTHER_LANGUAGE_COLUMNS["text_b"]].notna().sum())

    def share(self, count: int) -> float:
        return count / self.sentence_pairs if self.sentence_pairs else 0.0


def sentence_pairs_check(checked: pd.DataFrame, gate: GateConfig, lang_a: str, lang_b: str, *, suite: str) -> Check:
    """The suite for one partition's pairs; ``checked`` has the helper columns (:func:`with_helper_columns`)."""
    score_columns = ["alignment_score", "domain_relevance", *(c for c in OPTIONAL_SCORE_COLUMNS if c in checked.columns)]

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectTableColumnsToMatchSet(column_set=list(SENTENCE_PAIR_COLUMNS), exact_match=False),
            *(
                gxe.ExpectColumnValuesToNotBeNull(column=column)
                for column in ("url_a", "url_b", "text_a", "text_b", "alignment_score", "domain_relevance", "pair_hash")
            ),
            *(gxe.ExpectColumnValuesToMatchRegex(column=column, regex=r"\S") for column in ("text_a", "text_b")),
            *(gxe.ExpectColumnValuesToBeBetween(column=column, min_value=0.0, max_value=1.0) for column in score_columns),
            gxe.ExpectColumnValuesToBeInSet(column="lang_a", value_set=[lang_a]),
            gxe.ExpectColumnValuesToBeInSet(column="lang_b", value_set=[lang_b]),
            gxe.ExpectColumnValuesToBeBetween(column=LENGTH_RATIO_COLUMN, max_value=float(gate.max_length_ratio)),
        ]

    return Check(suite, checked, expectations)


def run_sentence_pairs_check(
    summary: PairsSummary, gate: GateConfig, *, document_pairs: int, previous_count: int | None = None
) -> Check:
    """The suite for the run's pairs as a whole (``previous_count``: the pair's last release size, if any)."""
    low, high = volume_bounds(gate, previous_count)
    figures = {
        "sentence_pairs": summary.sentence_pairs,
        "document_pairs": document_pairs,
        "duplicate_share": summary.share(summary.repeated),
        "other_language_share_a": summary.share(summary.other_language_a),
        "other_language_share_b": summary.share(summary.other_language_b),
    }

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectColumnValuesToBeBetween(column="sentence_pairs", min_value=low, max_value=high),
            gxe.ExpectColumnValuesToBeBetween(column="document_pairs", min_value=gate.min_document_pairs),
            gxe.ExpectColumnValuesToBeBetween(column="duplicate_share", max_value=float(gate.max_duplicate_share)),
            *(
                gxe.ExpectColumnValuesToBeBetween(column=column, max_value=float(gate.max_other_language_share))
                for column in ("other_language_share_a", "other_language_share_b")
            ),
        ]

    return Check(SUITE_NAME, pd.DataFrame([figures]), expectations)
