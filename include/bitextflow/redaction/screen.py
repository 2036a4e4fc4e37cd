"""The publication guards applied to what a release is made of: sentence pairs, monolingual sentences and document
pairs, each frame screened against the takedown list and for personal data, every item set aside counted by reason.

Reasons (:class:`~bitextflow.counts.StageCounts`): ``takedown_url``, ``takedown_prefix``, ``takedown_host``,
``takedown_text`` (dropped); ``personal_data_<type>`` (repaired: items kept with values of that type replaced, an
item counted once per type it held; or dropped, with ``action: drop``, under the first type it held in
:data:`~bitextflow.redaction.personal_data.PERSONAL_DATA_TYPES` order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from bitextflow.counts import StageCounts
from bitextflow.redaction.personal_data import PERSONAL_DATA_TYPES, PersonalDataDetector, redact
from bitextflow.redaction.takedowns import TakedownList
from bitextflow.text.comparison import pair_hash

PERSONAL_DATA_REASON = "personal_data_"


@dataclass(frozen=True)
class Screen:
    """What to set aside (``takedowns``) and what personal data to look for (``detector``; None: none), and whether
    a text holding some is redacted (``replace``) or set aside (``drop``)."""

    takedowns: TakedownList = field(default_factory=TakedownList)
    detector: PersonalDataDetector | None = None
    action: Literal["replace", "drop"] = "replace"

    def sentence_pairs(self, pairs: pd.DataFrame, counts: StageCounts) -> pd.DataFrame:
        """``pairs`` (sentence-pair rows) without those taken down, personal data replaced (``pair_hash`` computed
        again where a text changed) or its pairs dropped; what is set aside is counted in ``counts``."""
        return self._screen(pairs, counts, ("url_a", "url_b"), ("text_a", "text_b"))

    def sentences(self, sentences: pd.DataFrame, counts: StageCounts) -> pd.DataFrame:
        """``sentences`` (``text`` and, where known, ``url``) screened the same way, one sentence at a time."""
        return self._screen(sentences, counts, ("url",) if "url" in sentences.columns else (), ("text",))

    def document_pairs(self, document_pairs: pd.DataFrame, counts: StageCounts) -> pd.DataFrame:
        """``document_pairs`` without those whose page is taken down (they carry no text)."""
        return self._screen(document_pairs, counts, ("url_a", "url_b"), ())

    def item(
        self, urls: Sequence[str], texts: Sequence[str], counts: StageCounts, found: dict[str, int] | None = None
    ) -> Sequence[str] | None:
        """One item (a pair's sides, a sentence, a document's title and paragraphs) by its ``urls`` and ``texts``:
        None when it is set aside (counted under the reason), else its texts, ``texts`` itself when nothing changed,
        or a new list with personal data replaced (counted per type found; ``found`` gets the values replaced per
        type)."""
        entry = self.takedowns.match(urls, texts) if len(self.takedowns) else None
        if entry is not None:
            counts.drop(entry.reason)
            return None
        if self.detector is None or not texts:
            return texts
        redacted, kinds = redact(texts, self.detector)
        if not kinds:
            return texts
        if self.action == "drop":
            counts.drop(PERSONAL_DATA_REASON + next(kind for kind in PERSONAL_DATA_TYPES if kind in kinds))
            return None
        for kind in kinds:
            counts.repair(PERSONAL_DATA_REASON + kind)
        if found is not None:
            found.update(kinds)
        return redacted

    def _screen(
        self, frame: pd.DataFrame, counts: StageCounts, url_columns: Sequence[str], text_columns: Sequence[str]
    ) -> pd.DataFrame:
        if frame.empty or (not len(self.takedowns) and (self.detector is None or not text_columns)):
            return frame
        urls = list(zip(*(frame[c].fillna("").astype(str) for c in url_columns), strict=True)) if url_columns else None
        texts = list(zip(*(frame[c].fillna("").astype(str) for c in text_columns), strict=True)) if text_columns else None
        keep = [True] * len(frame)
        replaced: dict[int, Sequence[str]] = {}
        for row in range(len(frame)):
            row_texts = texts[row] if texts is not None else ()
            result = self.item(urls[row] if urls is not None else (), row_texts, counts)
            if result is None:
                keep[row] = False
            elif result is not row_texts:
                replaced[row] = result
        if not replaced and all(keep):
            return frame
        screened = frame.reset_index(drop=True)
        if replaced:
            rows = list(replaced)
            for index, column in enumerate(text_columns):
                screened.loc[rows, column] = [replaced[row][index] for row in rows]
            if "pair_hash" in screened.columns and len(text_columns) == 2:
                # the hash of the original texts would stand for the personal data it held
                screened.loc[rows, "pair_hash"] = [pair_hash(*replaced[row]) for row in rows]
        return screened[keep].reset_index(drop=True)
