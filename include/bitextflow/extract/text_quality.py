"""Running-text quality of web paragraphs and documents, in the MaCoCu annotation scheme.

The labels are those of the manual evaluation of web corpora (MaCoCu, OSCAR, mC4, CC100) by van Noord et al., "Do
Language Models Care About Text Quality? Evaluating Web-Crawled Corpora Across 11 Languages" (LREC-COLING 2024;
annotations and code: RikVN/Corpus_Eval), made for the MaCoCu corpora (Bañón et al., "MaCoCu: Massive collection and
curation of monolingual and bilingual data: focus on under-resourced languages", EAMT 2022):

- ``PT`` publishable running text; ``RTE`` running text with (slight) errors or non-standard;
- ``PRT`` partially running text; ``NRT`` not running text (menus, lists, tables, keywords, code);
- ``WLN`` wrong language or no language.

"Keep" is ``PT`` or ``RTE`` (:data:`KEEP_LABELS`).

How: a paragraph gets 12 "badness" terms, each 0..1 and each a property of the text that means the same in any
language and script (:data:`TERMS`; no word lists): letters (with their combining marks) among its characters,
sentences that end with a terminal mark, a lower-case start, list separators, Latin mixed with another script, the
share of capitalised words, few words, a trailing ellipsis, apostrophes detached from their word (machine-translation
output, not a quoted word), repeated words, and
the language identifier's verdict (:func:`bitextflow.extract.language.identify` restricted to the expected language:
no language, CLD2 not sure). Their weighted sum ``z`` gives ``score = 2 ** (-z / THRESHOLD)``: 1 for a clean
paragraph, 0.5 at the threshold. Keep when ``score >= 0.5``: ``PT`` from 0.75, ``RTE`` below; under 0.5, ``PRT``
from 0.4, ``NRT`` below. Another language than expected is always ``WLN`` and never kept; no language is ``WLN``
when the score does not keep a text with some letters (numbers alone are ``NRT``). For a language that neither identifier knows, the language terms stay 0.

The weights and the threshold (:data:`WEIGHTS`, :data:`THRESHOLD`) come from a coordinate search on a coarse grid
(``bench/text_quality.py``) on the MaCoCu corpus-evaluation annotations (bg, hr, is, mk, mt; two annotators). The
figure reported is leave-one-language-out: five folds, each choosing weights and threshold on four languages and
scored on the fifth, averaged over five orders of the search. The shipped values are the search in the terms' own
order run on all five (:data:`WEIGHTS_CHOSEN_ON`). These 12 weights and 1 threshold are
all that comes from that data (its licence is evaluation only, so no model is fit to it); docs/text-quality.md
has the figures.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import regex

from bitextflow.extract.language import identifiable_languages, identifier_code, identify
from bitextflow.text.languages import UNKNOWN, cld2_languages, cld2_top, from_iso639_3, one_language
from bitextflow.text.lengths import UNSPACED_LANGUAGES, WORD_CHARACTER, token_count, weighted_length, words

QUALITY_LABELS = ("PT", "RTE", "PRT", "NRT", "WLN")
KEEP_LABELS = frozenset({"PT", "RTE"})


@dataclass(frozen=True)
class TextQuality:
    """A verdict: ``label`` one of :data:`QUALITY_LABELS`; ``score`` 0..1, higher = more likely kept running text."""

    label: str
    score: float


#: The badness terms of :func:`terms`, each 0..1 (0: nothing wrong).
TERMS = (
    "nonletter",  # few letters among the characters that are not spaces (numbers, symbols, codes)
    "noterm",  # the share of its sentences that end without a terminal mark (. ! ? … 。 ። ...)
    "lower",  # it starts with a lower-case letter (a fragment)
    "separators",  # list separators per word: | • · ► ▪ ■ ● → /
    "mix",  # Latin and another script mixed (the smaller share, five times)
    "caps",  # the share of its words that start with a capital (titles, menus, names)
    "short",  # few words (from 12 words on: 0)
    "ellipsis",  # it ends with ... or … (a teaser cut short)
    "apostrophe",  # apostrophes detached from their word ("ta 'din"): machine-translation output
    "repetition",  # words repeated (keyword lists, generated pages): from 3 in 4 words distinct down to 2 in 5
    "unknown",  # the identifier names no language
    "unsure",  # CLD2 is not sure it is the expected language
    "other",  # the identifier names another language than expected: always WLN, never weighted
)

# Chosen by bench/text_quality.py (the search on all five languages; see the module docstring).
WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "nonletter": 5.0,
        "noterm": 0.25,
        "lower": 1.0,
        "separators": 0.5,
        "mix": 0.5,
        "caps": 1.0,
        "short": 0.25,
        "ellipsis": 1.0,
        "apostrophe": 5.0,
        "repetition": 1.0,
        "unknown": 1.0,
        "unsure": 0.25,
    }
)
THRESHOLD = 1.111
#: The languages whose annotations chose WEIGHTS and THRESHOLD: for any other language they are unseen.
WEIGHTS_CHOSEN_ON = ("bg", "hr", "is", "mk", "mt")
# The label bands of the score. Only the keep cut (0.5) is measured; the other two split kept and dropped texts into
# the scheme's labels: PRT from 0.4 (the texts annotator 1 calls NRT have median scores of 0.33-0.46 per language).
PT_SCORE, KEEP_SCORE, PRT_SCORE = 0.75, 0.5, 0.4

_LETTER = re.compile(r"[^\W\d_]")
# Combining marks count as letters: re's \w leaves out the vowel signs and viramas of Devanagari, Thai or Tamil,
# which made a third of every Hindi word "not letters". Counted apart, as they never occur in ASCII text.
_MARK = regex.compile(r"\p{M}")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f]")  # with the accents Latin may combine
_TERMINAL = ".!?…։।॥。！？؟۔።။།។\u037e"
_CLOSERS = "\"'»”’)]}›“」』"
_FULL_WIDTH_END = "。！？"  # needs no space after it
_SENTENCE_END, _GREEK_SENTENCE_END = (  # Greek's question mark is ';'
    re.compile(rf"[{re.escape(marks)}]+[{re.escape(_CLOSERS)}]*(?=\s|$)|[{_FULL_WIDTH_END}]+[{re.escape(_CLOSERS)}]*")
    for marks in (_TERMINAL, _TERMINAL + ";")
)
# A middle dot or slash joined to the word before it separates no items: Catalan's "col·lecció", Greek's ano teleia
# ("λέξη·", a semicolon), "i/ili", "km/h". Looked behind once a mark is found: a look-behind first would be tried at
# every character (seven times slower).
_SEPARATOR = re.compile(r"[|•·►▪■●◦→/](?<!\w[·/])")
_DETACHED_APOSTROPHE = regex.compile(rf"{WORD_CHARACTER} ['’‘`]{WORD_CHARACTER}", regex.V1)
# A quoted word or phrase also opens with a mark after a space ('Automatski', ‘echt wit’). Its quote closes after a
# word of three letters or more: Maltese machine translation detaches "ta'" and "ma'" ("ta 'ħidma ma'", "ta ‘din ma’").
_QUOTED = regex.compile(rf"(?<!{WORD_CHARACTER})['‘`][^'’‘`]{{0,40}}?{WORD_CHARACTER}{{3}}['’](?!{WORD_CHARACTER})", regex.V1)
_ELLIPSIS = ("...", "…", "..", "[…]", "[...]")
_WORD_EDGES = "\"'„“”«»‘’()[]{}.,;:!?*-–—"
# Scripts written without a sentence-final mark (Thai, Lao): the term says nothing there.
_NO_TERMINAL_MARK = frozenset({"th", "lo"})
_SHORT_WORDS = 12
_REPEATED_FROM = 8  # words; fewer say nothing of repetition


@functools.lru_cache(maxsize=256)
def expected_language(language: str) -> str:
    """The identifier's code for the language a text is expected in (``hrv``, ``es-ES``, ``Croatian``), with a code
    read as a pair's is, through CLDR's aliases: an ISO 639-3 code as its ISO 639-1 code or its macrolanguage (``bos``
    bs, ``pes`` fa, ``zsm`` ms), Montenegrin (``cnr``) and the retired Serbo-Croatian ``sh`` as Serbian, whose group
    the identifier names them in, ``mo`` as Romanian. A code the identifier answers stays where its alias is no language
    the identifier names (``bh``, Bihari, is CLDR's Bhojpuri)."""
    code = identifier_code(language)
    aliased = from_iso639_3(code)
    return aliased if aliased in identifiable_languages() or code not in identifiable_languages() else code


def terms(text: str, language: str, *, detected_language: str | None = None) -> dict[str, float]:
    """The badness terms of :data:`TERMS` for ``text`` expected in ``language`` (each 0..1).

    ``detected_language``: what the identifier already said of this text (None: identify it here, restricted to the
    expected language as the extract stage does for a paragraph of a page in that language).
    """
    text = text.strip()
    expected = expected_language(language)
    found = dict.fromkeys(TERMS, 0.0)
    if expected in identifiable_languages():
        if detected_language is None:
            detected = identify(text, frozenset({expected}))[0] if text else UNKNOWN
        else:
            detected = identifier_code(detected_language)
        found["unknown"] = float(detected == UNKNOWN)
        found["other"] = float(detected not in (expected, UNKNOWN))
        if expected in cld2_languages():  # CLD2 is never sure of a language it cannot name
            cld2_language, reliable = cld2_top(text) if text else (UNKNOWN, False)
            # a language of a group no identifier tells apart names the group ("bs" for Serbian in Latin script)
            found["unsure"] = float(not (reliable and one_language(identifier_code(cld2_language), expected)))
    tokens = text.split()
    n_words = token_count(text, expected) if expected in UNSPACED_LANGUAGES else len(tokens)
    if not n_words:
        return found | {"nonletter": 1.0, "short": 1.0, "noterm": 1.0}
    visible = len(text) - text.count(" ")
    letters = len(_LETTER.findall(text)) + (0 if text.isascii() else len(_MARK.findall(text)))
    latin = len(_LATIN.findall(text))
    found["nonletter"] = min(1.0, max(0.0, (0.85 - letters / visible) / 0.35))
    found["mix"] = min(1.0, 5 * min(latin, letters - latin) / letters) if letters else 0.0
    found["short"] = max(0.0, 1 - math.log1p(n_words) / math.log1p(_SHORT_WORDS))
    found["separators"] = min(1.0, 5 * len(_SEPARATOR.findall(text)) / n_words)
    if _DETACHED_APOSTROPHE.search(text):
        found["apostrophe"] = min(1.0, 10 * len(_DETACHED_APOSTROPHE.findall(_QUOTED.sub(" ", text))) / n_words)
    found["ellipsis"] = float(text.endswith(_ELLIPSIS))
    found_words = words(text)
    if len(found_words) >= _REPEATED_FROM:
        distinct = len({word.lower() for word in found_words})
        found["repetition"] = min(1.0, max(0.0, (0.75 - distinct / len(found_words)) / 0.35))
    first = next((ch for ch in text if ch.isalnum()), "")
    found["lower"] = float(first.islower())
    # Over all its words, not its cased ones: the Latin words in Korean or Persian text are names and keys ("Ctrl").
    spans = found_words if expected in UNSPACED_LANGUAGES else [token.strip(_WORD_EDGES) for token in tokens]
    lettered = [word for word in spans if _LETTER.search(word)]
    if lettered:
        found["caps"] = sum(1 for word in lettered if word[0].isupper()) / len(lettered)
    if expected not in _NO_TERMINAL_MARK:
        pieces = (_GREEK_SENTENCE_END if expected == "el" else _SENTENCE_END).split(text)
        sentences = sum(1 for piece in pieces if _LETTER.search(piece)) or 1
        found["noterm"] = 1 - min(1.0, (len(pieces) - 1) / sentences)
    return found


def badness(found: Mapping[str, float], weights: Mapping[str, float] = WEIGHTS) -> float:
    """The weighted sum of the terms (``other`` excluded: another language is ruled on, not weighed)."""
    return sum(weight * found[name] for name, weight in weights.items() if weight)


def _label(score: float) -> str:
    if score >= KEEP_SCORE:
        return "PT" if score >= PT_SCORE else "RTE"
    return "PRT" if score >= PRT_SCORE else "NRT"


def verdict(found: Mapping[str, float], weights: Mapping[str, float] = WEIGHTS, threshold: float = THRESHOLD) -> TextQuality:
    """The label and score of a paragraph whose terms are ``found``, under ``weights`` and ``threshold``."""
    score = 2.0 ** (-badness(found, weights) / threshold)
    if found["other"]:
        return TextQuality("WLN", min(score, KEEP_SCORE / 2))
    label = _label(score)
    if found["unknown"] and label not in KEEP_LABELS and found["nonletter"] < 1:  # words, but of no language
        label = "WLN"
    return TextQuality(label, score)


def paragraph_quality(text: str, language: str, *, detected_language: str | None = None) -> TextQuality:
    """The MaCoCu label of a paragraph (or a short text) expected in ``language`` (ISO 639-1, or 639-3 where no
    639-1 code exists), with a 0..1 score (keep: ``score >= 0.5``, labels ``PT`` and ``RTE``).

    ``detected_language``: what language identification already said of this paragraph, so that it is not run
    again (None: it is run here). A paragraph with no text is ``NRT`` with score 0.
    """
    if not text.strip():
        return TextQuality("NRT", 0.0)
    return verdict(terms(text, language, detected_language=detected_language))


def document_quality(paragraphs: Sequence[tuple[str, TextQuality]]) -> TextQuality:
    """A document's verdict from its paragraphs' ``(text, verdict)``, each weighing its length (in Latin-character
    equivalents, :func:`~bitextflow.text.lengths.weighted_length`, fair across scripts).

    The score is the weighted mean of the paragraphs' scores, labelled as a paragraph's is; ``WLN`` when paragraphs
    in a wrong language or none weigh more than half. No text at all is ``NRT`` with score 0.
    """
    weights = [weighted_length(text.strip()) for text, _quality in paragraphs]
    total = sum(weights)
    if not total:
        return TextQuality("NRT", 0.0)
    score = sum(weight * quality.score for weight, (_text, quality) in zip(weights, paragraphs, strict=True)) / total
    wrong = sum(weight for weight, (_text, quality) in zip(weights, paragraphs, strict=True) if quality.label == "WLN")
    if wrong > total / 2:
        return TextQuality("WLN", min(score, KEEP_SCORE / 2))
    return TextQuality(_label(score), score)
