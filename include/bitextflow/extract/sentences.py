"""Sentences of a document's main content, filtered as in the MaCoCu DSI preprocessing.

Main paragraphs (not boilerplate, not the title, not code) in the document's language are split with
sentencex (per-language rules; Thai by a model, :mod:`bitextflow.text.sentences`), punctuation is normalised
the Moses way (sacremoses), and each sentence must pass, in order: the token-count window (``too_few_tokens`` /
``too_many_tokens``; words of an ICU segmenter for Chinese, Japanese, Thai, see :func:`token_count`), the optional
end-punctuation rule (``no_end_punctuation``) and the language check (``sentence_other_language``:
identified, within the document's language set, as another language). Every drop is counted.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from sacremoses import MosesPunctNormalizer

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.language import first_opinion, identify
from bitextflow.extract.model import SENTENCE_SOURCE_TYPES, ExtractedPage
from bitextflow.text.languages import UNKNOWN
from bitextflow.text.lengths import token_count
from bitextflow.text.scripts import base_language
from bitextflow.text.sentences import split_sentences


@dataclass(slots=True)
class Sentence:
    paragraph_index: int
    paragraph_type: str
    sentence_index: int
    text: str
    language: str


def required_text(pattern: str) -> str:
    """Text that every match of the regular expression ``pattern`` contains; "" when none is found.

    The longest run of plain characters at the pattern's top level: outside groups and classes, with no
    quantifier on them. Conservative: a pattern with an alternative (``|``), an extension (``(?``) or an
    escape other than ``\\d \\s \\w \\b`` (and their capitals), ``\\n \\r \\t`` and the like and escaped punctuation
    gets "".
    """
    if "|" in pattern or "(?" in pattern:
        return ""
    runs, run, depth, index = [], "", 0, 0
    while index < len(pattern):
        char, index = pattern[index], index + 1
        literal = None
        if char == "\\":
            escaped, index = pattern[index : index + 1], index + 1
            if escaped and not escaped.isalnum():
                literal = escaped
            elif escaped in _CHARACTER_ESCAPES:
                literal = _CHARACTER_ESCAPES[escaped]
            elif escaped not in _CLASS_ESCAPES:  # \x.., \u...., \1 ...: not worth reading
                return ""
        elif char == "[":
            index += pattern[index : index + 1] == "^"
            index += pattern[index : index + 1] == "]"  # a ] first in a class is a member
            while index < len(pattern) and pattern[index] != "]":
                index += 2 if pattern[index] == "\\" else 1
            index += 1
        elif char == "{":  # a counted repeat of what came before
            index = pattern.find("}", index) + 1
            if not index:
                return ""
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char not in _OPERATORS:
            literal = char
        if depth or literal is None or pattern[index : index + 1] in _QUANTIFIERS:
            runs.append(run)
            run = ""
        else:
            run += literal
    return max([*runs, run], key=len)


_CHARACTER_ESCAPES = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_CLASS_ESCAPES = frozenset("dDsSwWbB")
_OPERATORS = frozenset(".^$*+?")
_QUANTIFIERS = frozenset("*+?{")
# sacremoses' rule for runs of spaces (" +" -> " ") leaves a single space as it is: two spaces are its trigger
_SPACE_RUN = (" +", " ")


@dataclass(frozen=True, slots=True)
class _Normaliser:
    substitutions: list[tuple[re.Pattern[str], str]]
    trigger: re.Pattern[str] | None  # found in every text a substitution changes; None when there is no such test


def _trigger(texts: list[str]) -> re.Pattern[str] | None:
    """A pattern found in every text that contains one of ``texts``: its rarest character, or the whole text
    when all its characters are common ones (``''``, two spaces)."""
    if not all(texts):
        return None
    chars, whole = set(), set()
    for text in texts:
        rarest = min(text, key=_commonness)
        if len(text) > 1 and _commonness(rarest) == _COMMON:
            whole.add(re.escape(text))
        else:
            chars.add(re.escape(rarest))
    return re.compile("|".join(([f"[{''.join(sorted(chars))}]"] if chars else []) + sorted(whole)))


_COMMON = 2


def _commonness(char: str) -> int:
    """0 for non-ASCII characters, 1 for ASCII punctuation and controls, 2 for letters, digits, spaces and , . ' -"""
    if not char.isascii():
        return 0
    return _COMMON if char.isalnum() or char in " ,.'-" else 1


@functools.cache
def _normaliser(language: str, ascii_text: bool = False) -> _Normaliser:
    """sacremoses' substitutions for ``language``, compiled once: ``MosesPunctNormalizer.normalize`` passes
    each pattern as a string to ``re.sub``, whose cache lookup cost as much as the matching.

    ``ascii_text``: only those that can match ASCII text (their :func:`required_text` is ASCII). When these
    turn ASCII into ASCII (they do for every language sacremoses knows), the others never match an ASCII
    sentence, whatever ran before. The trigger skips all of them for a sentence that none can change (two in
    three): a substitution needs its required text, and one that changes nothing leaves the next ones
    facing the same sentence.
    """
    moses = MosesPunctNormalizer(lang=language, pre_replace_unicode_punct=False, post_remove_control_chars=False)
    required = {
        pattern: "  " if (pattern, substitution) == _SPACE_RUN else required_text(pattern)
        for pattern, substitution in moses.substitutions
    }
    substitutions = moses.substitutions
    ascii_only = [(pattern, substitution) for pattern, substitution in substitutions if required[pattern].isascii()]
    if ascii_text and all(substitution.isascii() for _pattern, substitution in ascii_only):
        substitutions = ascii_only
    return _Normaliser(
        [(re.compile(pattern), substitution) for pattern, substitution in substitutions],
        _trigger([required[pattern] for pattern, _substitution in substitutions]),
    )


def normalise_punctuation(text: str, language: str) -> str:
    """Moses punctuation normalisation (quotes, dashes, spaces around punctuation) for ``language``."""
    normaliser = _normaliser(base_language(language), text.isascii())
    if normaliser.trigger is None or normaliser.trigger.search(text):
        for pattern, substitution in normaliser.substitutions:
            text = pattern.sub(substitution, text)
    return " ".join(text.split())


def ends_with_punctuation(text: str) -> bool:
    """Whether the sentence ends in punctuation (closing quotes and brackets looked through)."""
    stripped = text.rstrip()
    while stripped and unicodedata.category(stripped[-1]) in ("Pe", "Pf") or stripped.endswith(('"', "'")):
        stripped = stripped[:-1].rstrip()
    return bool(stripped) and unicodedata.category(stripped[-1]).startswith("P") and stripped[-1] not in "-_,;:(["


def sentences_of(document: ExtractedPage, config: ExtractConfig, counts: StageCounts) -> list[Sentence]:
    """The document's sentences that pass the filters; the others are counted in ``counts``."""
    found: list[Sentence] = []
    language = document.language
    candidates = frozenset(code for code, _share in document.language_set) | {language}
    first = first_opinion(config.language_identifier)
    for p_index, paragraph in enumerate(document.paragraphs):
        if paragraph.boilerplate or paragraph.type not in SENTENCE_SOURCE_TYPES:
            continue
        pieces = split_sentences(language, paragraph.text)
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
            if len(pieces) > 1 and identify(text, candidates, first)[0] not in (language, UNKNOWN):
                counts.drop("sentence_other_language")
                continue
            found.append(Sentence(p_index, paragraph.type, s_index, text, language))
    return found
