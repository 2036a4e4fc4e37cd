"""Sentences of a document's main content, filtered as in the MaCoCu DSI preprocessing.

Main paragraphs (not boilerplate, not the title, not code) in the document's language are split with
sentencex (per-language rules), punctuation is normalised the Moses way (sacremoses), and each sentence
must pass, in order: the token-count window (``too_few_tokens`` / ``too_many_tokens``; words of an ICU
segmenter for Chinese, Japanese, Thai, see :func:`token_count`), the optional
end-punctuation rule (``no_end_punctuation``) and the language check (``sentence_other_language``:
identified, within the document's language set, as another language). Every drop is counted.
"""

from __future__ import annotations

import functools
import re
import re._parser  # the pattern parser of ``re``: which substitutions need a non-ASCII character
import unicodedata
from dataclasses import dataclass

from icu4py.breakers import WordBreaker
from sacremoses import MosesPunctNormalizer
from sentencex import segment

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.language import UNKNOWN, identify
from bitextflow.extract.model import SENTENCE_SOURCE_TYPES, Document

# Languages whose script has no spaces between words; ICU segments them with its word dictionaries.
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})


@dataclass(slots=True)
class Sentence:
    paragraph_index: int
    paragraph_type: str
    sentence_index: int
    text: str
    language: str


def _needs_non_ascii(pattern: str) -> bool:
    """Whether every match of ``pattern`` contains a non-ASCII character: one is a literal of its top-level
    sequence (``„``, ``\\xa0%``), which no quantifier or alternative can leave out."""
    try:
        items = re._parser.parse(pattern)
    except re.error:
        return False
    return any(op is re._parser.LITERAL and value > 0x7F for op, value in items)


@functools.cache
def _normaliser(language: str, ascii_text: bool = False) -> list[tuple[re.Pattern[str], str]]:
    """sacremoses' substitutions for ``language``, compiled once: ``MosesPunctNormalizer.normalize`` passes
    each pattern as a string to ``re.sub``, whose cache lookup cost as much as the matching.

    ``ascii_text``: only those that can match ASCII text. When these turn ASCII into ASCII (they do for
    every language sacremoses knows), the others never match an ASCII sentence, whatever ran before.
    """
    moses = MosesPunctNormalizer(lang=language, pre_replace_unicode_punct=False, post_remove_control_chars=False)
    substitutions = moses.substitutions
    ascii_only = [(pattern, substitution) for pattern, substitution in substitutions if not _needs_non_ascii(pattern)]
    if ascii_text and all(substitution.isascii() for _pattern, substitution in ascii_only):
        substitutions = ascii_only
    return [(re.compile(pattern), substitution) for pattern, substitution in substitutions]


def normalise_punctuation(text: str, language: str) -> str:
    """Moses punctuation normalisation (quotes, dashes, spaces around punctuation) for ``language``."""
    for pattern, substitution in _normaliser(language, text.isascii()):
        text = pattern.sub(substitution, text)
    return " ".join(text.split())


def token_count(text: str, language: str) -> int:
    """Words of ``text``: whitespace tokens, or for languages written without spaces (Chinese, Japanese,
    Thai, ...) the words of ICU's dictionary-based word segmenter, so the DSI token window means the
    same in every language. Segments without a letter or digit (punctuation, spaces) are not words.
    """
    if language not in UNSPACED_LANGUAGES:
        return len(text.split())
    return sum(1 for word in WordBreaker(text, language) if any(ch.isalnum() for ch in word))


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
            tokens = token_count(text, language)
            if tokens < config.min_sentence_tokens:
                counts.drop("too_few_tokens")
                continue
            if tokens > config.max_sentence_tokens:
                counts.drop("too_many_tokens")
                continue
            if config.require_end_punctuation and not ends_with_punctuation(text):
                counts.drop("no_end_punctuation")
                continue
            # a paragraph of one sentence was identified already (it is in the document's language)
            if len(pieces) > 1 and identify(text, candidates)[0] not in (language, UNKNOWN):
                counts.drop("sentence_other_language")
                continue
            found.append(Sentence(p_index, paragraph.type, s_index, text, language))
    return found
