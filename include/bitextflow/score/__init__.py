"""Hard rules on sentence pairs.

Each rule returns the tag of the violation or nothing; a pair with any tag is rejected, kept for
inspection with its tags, and counted under each tag. With ``score.use_bicleaner``, bifixer,
bicleaner-hardrules and bicleaner-ai (:mod:`~bitextflow.score.bicleaner`) run after these rules.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections import Counter

from text_to_num import alpha2digit

from bitextflow.config import ScoreConfig
from bitextflow.text.comparison import normalise_for_comparison
from bitextflow.text.lengths import length_ratio, weighted_length
from bitextflow.text.scripts import base_language

# \d is every decimal digit (full-width, Arabic-Indic, Devanagari, ...); separators: ASCII, full-width, Arabic
_SEPARATORS = ".,\uff0c\uff0e\u066b\u066c"
_NUMBER = re.compile(rf"\d+(?:[{_SEPARATORS}]\d+)*")
_SEPARATOR = re.compile(f"[{_SEPARATORS}]")
#: A footnote mark as DocBook and MediaWiki render it ("mice[21],"): a translation that adds or drops a footnote numbers
#: the following ones otherwise ("[19]" against "[18]" in 11 right en-zh pairs of the Installation Guide).
_FOOTNOTE_MARK = re.compile(r"\[\d{1,3}\]")
#: Names of numbered parts of a document as documentation toolchains render them before the number (DocBook's gentext,
#: Sphinx's numfig): English, Spanish, German, French, Russian (stems, for the cases) and Arabic words, and the
#: Chinese and Japanese characters ("表1.1", "第 4.7.4 节"). A translation's toolchain may render a cross-reference by
#: its title alone (Japanese DocBook: "「仮想コンソール」" for "Section 1.1.6, “Virtual consoles”"), and a splitter
#: may cut "Table 1.1." off a caption in one language and not in the other: of the 268 right en-ja pairs of the
#: Debian Reference that the rule rejected for such numbers and others, 226 pass now.
_LABEL_WORDS = (
    "sections?|chapters?|tables?|figures?|examples?|appendix|appendices|secci[oó]n|cap[ií]tulo|tabla|figura|ejemplo"
    "|ap[eé]ndice|abschnitt|kapitel|tabelle|abbildung|beispiel|anhang|chapitre|tableau|exemple|annexe|раздел\\w*"
    "|глав\\w*|таблиц\\w*|рисун\\w*|пример\\w*|приложени\\w*|القسم|الفصل|الجدول|الشكل|المثال|الملحق"
)
_LABEL_CHARACTERS = "表図图例第"
_LABELLED_NUMBER = re.compile(rf"(?:(?<!\w)(?:{_LABEL_WORDS})\s*|[{_LABEL_CHARACTERS}]\s*)(\d+(?:[.\uff0e]\d+)*)", re.IGNORECASE)
#: The languages whose spelled numbers text2num reads (``alpha2digit``).
SPELLED_NUMBER_LANGUAGES = frozenset({"da", "de", "en", "es", "fr", "it", "nl", "pt"})
#: Number words text2num does not read: English multiplicatives ("tap twice" against "2 回タップ", "press it once"
#: against "1 度だけ押す") and "single" ("a single window" against "ウィンドウを 1 つ").
_MORE_NUMBER_WORDS = {"en": {"once": "1", "twice": "2", "thrice": "3", "single": "1"}}
_MORE_NUMBER_WORD = {
    language: re.compile(rf"\b(?:{'|'.join(words)})\b", re.IGNORECASE) for language, words in _MORE_NUMBER_WORDS.items()
}
#: The languages whose numerals in Chinese characters cn2an reads ("三" 3, "十二" 12, "二〇二四" 2024).
CJK_NUMERAL_LANGUAGES = frozenset({"ja", "zh"})


class _AsciiDigits(dict):
    """``str.translate`` table: every Unicode decimal digit to its ASCII digit, filled as characters are met."""

    def __missing__(self, code: int) -> int:
        digit = unicodedata.decimal(chr(code), None)
        self[code] = value = code if digit is None else ord("0") + digit
        return value


_ASCII_DIGITS = _AsciiDigits()


def numbers_of(text: str) -> list[str]:
    """Numbers written in digits of any script, as ASCII, separators removed, sorted: 1,000.5, 1.000,5 and
    １，０００．５ all become 10005."""
    found = _NUMBER.findall(text)
    if not text.isascii():
        found = [number.translate(_ASCII_DIGITS) for number in found]
    return sorted(_SEPARATOR.sub("", n) for n in found)


def numbers_read(text: str, lang: str) -> list[str]:
    """:func:`numbers_of` the text with its spelled numbers read as digits too where text2num reads ``lang`` ("dos"
    2, "treinta y cinco" 35, "primera" 1, "cero" 0, "two-finger" 2; English "twice" 2, :data:`_MORE_NUMBER_WORDS`)
    and numerals in Chinese characters where ``lang`` is Chinese or Japanese ("三番目" 3). Every number word counts, so "un libro" holds a 1: these are the numbers a side offers,
    never the ones it requires (:func:`unmatched_numbers`)."""
    language = base_language(lang).split("-")[0].lower()
    if language in SPELLED_NUMBER_LANGUAGES:
        if language in _MORE_NUMBER_WORD:
            words = _MORE_NUMBER_WORDS[language]
            text = _MORE_NUMBER_WORD[language].sub(lambda word: words[word.group(0).lower()], text)
        # text2num reads "two fingers" but not "two-finger" ("twenty-one" it reads either way)
        text = alpha2digit(text.replace("-", " "), language, threshold=0)
    elif language in CJK_NUMERAL_LANGUAGES:
        text = _cjk_numerals_read(text)
    return numbers_of(text)


def _cjk_numerals_read(text: str) -> str:
    import cn2an  # noqa: PLC0415 - only Chinese and Japanese pairs need it (and it imports slowly)

    with warnings.catch_warnings():  # it warns of each run of numeral characters it cannot read, and leaves it
        warnings.simplefilter("ignore", UserWarning)
        try:
            return str(cn2an.transform(text, "cn2an"))
        except (ValueError, KeyError, IndexError):
            return text


def labelled_numbers(text: str) -> Counter[str]:
    """The numbers of ``text`` that number a part of the document after its name (:data:`_LABELLED_NUMBER`: "Section
    1.1.6", "Tabla 2", "表1.1"), as :func:`numbers_of` writes them."""
    return Counter(numbers_of(" ".join(_LABELLED_NUMBER.findall(text))))


def unmatched_numbers(text_a: str, text_b: str, lang_a: str, lang_b: str) -> bool:
    """Whether a number one side writes in digits is missing from the other, in digits or in words ("There are 2
    types" and "Hay dos tipos" match; "Chapter 12" and "capítulo 13" do not). Each occurrence needs its own. Words
    are read only on a side whose digits fall short, so most pairs cost two regular-expression scans. Footnote marks
    (:data:`_FOOTNOTE_MARK`) are not numbers of the text, and where only one side holds numbers the other lacks, those
    that number a part of the document (:func:`labelled_numbers`: a cross-reference the other side renders by title,
    a caption's "表1.1") are not either."""
    text_a, text_b = _FOOTNOTE_MARK.sub(" ", text_a), _FOOTNOTE_MARK.sub(" ", text_b)
    digits_a, digits_b = Counter(numbers_of(text_a)), Counter(numbers_of(text_b))
    missing_in_b, missing_in_a = digits_a - digits_b, digits_b - digits_a
    if missing_in_b and (unread := missing_in_b - Counter(numbers_read(text_b, lang_b))):
        return _unexcused(unread, text_a, lang_a, text_b, lang_b)
    if missing_in_a and (unread := missing_in_a - Counter(numbers_read(text_a, lang_a))):
        return _unexcused(unread, text_b, lang_b, text_a, lang_a)
    return False


def _unexcused(unread: Counter[str], text: str, lang: str, other: str, other_lang: str) -> bool:
    """Whether the numbers of ``text`` that ``other`` lacks (``unread``) mismatch: some do not number a part of the
    document, or ``other`` offers a number of its own that ``text`` lacks ("Chapter 12" against "第十三章")."""
    if unread - labelled_numbers(text):
        return True
    return bool(Counter(numbers_read(other, other_lang)) - Counter(numbers_read(text, lang)))


def hard_rule_violations(text_a: str, text_b: str, config: ScoreConfig, lang_a: str = "", lang_b: str = "") -> list[str]:
    """Tags of the rules the pair breaks, in a fixed order; empty when it passes. ``lang_a``, ``lang_b``: the sides'
    languages, which say how numbers are spelled (none given: digits only)."""
    tags: list[str] = []
    a, b = text_a.strip(), text_b.strip()
    len_a, len_b = weighted_length(a), weighted_length(b)  # Latin-character equivalents: fair across scripts
    if len_a < config.min_characters or len_b < config.min_characters:
        tags.append("too_short")
    if min(len_a, len_b) and length_ratio(len_a, len_b) > config.max_length_ratio:
        tags.append("length_ratio")
    if normalise_for_comparison(a) == normalise_for_comparison(b):
        tags.append("identical_sides")
    if unmatched_numbers(a, b, lang_a, lang_b):
        tags.append("numbers_mismatch")
    return tags
