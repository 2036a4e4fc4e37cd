"""Sentences of a document's main content, filtered as in the MaCoCu DSI preprocessing.

Main paragraphs (not boilerplate, not the title, not code) in the document's language are split with
sentencex (per-language rules), punctuation is normalised the Moses way (sacremoses), and each sentence
must pass, in order: the token-count window (``too_few_tokens`` / ``too_many_tokens``), the optional
end-punctuation rule (``no_end_punctuation``) and the language check (``sentence_other_language``:
identified, within the document's language set, as another language). Every drop is counted.
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass

from sacremoses import MosesPunctNormalizer
from sentencex import segment

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.language import UNKNOWN, identify
from bitextflow.extract.model import SENTENCE_SOURCE_TYPES, Document


@dataclass(slots=True)
class Sentence:
    paragraph_index: int
    paragraph_type: str
    sentence_index: int
    text: str
    language: str


@functools.cache
def _normaliser(language: str) -> MosesPunctNormalizer:
    return MosesPunctNormalizer(lang=language, pre_replace_unicode_punct=False, post_remove_control_chars=False)


def normalise_punctuation(text: str, language: str) -> str:
    """Moses punctuation normalisation (quotes, dashes, spaces around punctuation) for ``language``."""
    return " ".join(_normaliser(language).normalize(text).split())


def ends_with_punctuation(text: str) -> bool:
    """Whether the sentence ends in punctuation (closing quotes and brackets looked through)."""
    stripped = text.rstrip()
    while stripped and unicodedata.category(stripped[-1]) in ("Pe", "Pf") or stripped.endswith(('"', "'")):
        stripped = stripped[:-1].rstrip()
    return bool(stripped) and unicodedata.category(stripped[-1]).startswith("P") and stripped[-1] not in "-_,;:(["


def sentences_of(document: Document, config: ExtractConfig, counts: StageCounts) -> list[Sentence]:
    """The document's sentences that pass the filters; the others are counted in ``counts``."""
    found: list[Sentence] = []
    language = document.language
    candidates = frozenset(code for code, _share in document.language_set) | {language}
    for p_index, paragraph in enumerate(document.paragraphs):
        if paragraph.boilerplate or paragraph.type not in SENTENCE_SOURCE_TYPES:
            continue
        pieces = [s.strip() for s in segment(language, paragraph.text) if s.strip()]
        counts.seen(len(pieces))
        if paragraph.out_of_language:
            counts.drop("paragraph_other_language", len(pieces))
            continue
        for s_index, piece in enumerate(pieces):
            text = normalise_punctuation(piece, language) if config.normalise_punctuation else piece
            tokens = len(text.split())
            if tokens < config.min_sentence_tokens:
                counts.drop("too_few_tokens")
                continue
            if tokens > config.max_sentence_tokens:
                counts.drop("too_many_tokens")
                continue
            if config.require_end_punctuation and not ends_with_punctuation(text):
                counts.drop("no_end_punctuation")
                continue
            detected, _sure = identify(text, candidates)
            if detected not in (language, UNKNOWN):
                counts.drop("sentence_other_language")
                continue
            found.append(Sentence(p_index, paragraph.type, s_index, text, language))
    return found
