"""Text length in units fair across scripts: Latin-character equivalents, and words.

A Chinese sentence has about a third as many characters as its English translation, a Japanese or Korean one about
half: a length-ratio rule in characters, set for English-Spanish, rejects most correct English-Chinese pairs. Here a
character of a script whose characters carry more text counts for more than one (:data:`SCRIPT_WEIGHTS`); every other
character (Latin, Cyrillic, Greek, Arabic, Devanagari, spaces, digits) counts as one, since translations between those
scripts have about as many characters (median ratio 0.8-1.05 for English against Russian, Greek and Vietnamese).

The weights are a least-squares fit of English block lengths on the per-script character counts of their
translations (relative error), over the blocks of the Debian Installation Guide whose English and translated pages
have as many blocks (block i translates block i; 2,324 blocks of 40 characters or more in Japanese, Chinese and
Korean; ``bench/script_lengths.py``). Checked on other text: on the Tatoeba Chinese-English test set (short everyday
sentences), the share of correct pairs whose length ratio exceeds 2.5 is 0.3% by this unit against 82% by characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import regex
from icu4py.breakers import WordBreaker

from bitextflow.text.scripts import base_language, bcp47

#: Latin-character equivalents per character, by script (code point ranges; everything else counts 1).
SCRIPT_WEIGHTS: dict[str, tuple[float, str]] = {
    "han": (3.6, "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"),
    "kana": (1.7, "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"),
    "hangul": (2.4, "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"),
    "cjk_punctuation": (1.6, "\u3000-\u303f\uff01-\uff65"),  # 、。「」 and full-width forms
}
_PATTERNS = {name: re.compile(f"[{ranges}]") for name, (_weight, ranges) in SCRIPT_WEIGHTS.items()}
# one search before the four counts: most non-ASCII text (accented Latin, Cyrillic) has none of these scripts
_WEIGHTED_SCRIPT = re.compile(f"[{''.join(ranges for _weight, ranges in SCRIPT_WEIGHTS.values())}]")
# Languages whose script has no spaces between words; ICU segments them with its word dictionaries.
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})
# Their scripts: Han and kana (as weighted above), Thai and Lao, Tibetan, Myanmar, Khmer
_UNSPACED_SCRIPT = re.compile(
    f"[{SCRIPT_WEIGHTS['han'][1]}{SCRIPT_WEIGHTS['kana'][1]}\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff]"
)
#: A character of a word (a ``regex`` V1 set): regex's ``\w``, which holds combining marks where re's cuts a Devanagari,
#: Thai or Tamil word at each vowel sign and virama, less the zero-width joiners, between the parts of a Persian word
#: that dictionaries list apart (کتاب‌ها, books: کتاب and ها). Letters, marks, digits and the underscore.
WORD_CHARACTER = r"[\w--\p{Join_Control}]"
#: A combining mark a script spells its words with (a ``regex`` V1 set): the vowel signs, viramas and nuktas of
#: Devanagari or Tamil, Thai's vowels and tone marks, Khmer's, Myanmar's, Tibetan's, Thaana's. Not the marks any
#: script may carry or leave out (accents, Unicode's "inherited" marks, Arabic's harakat among them), nor Hebrew's
#: points or an emoji's variation selector. Texts compared for identity keep these and drop those.
SPELLING_MARK = r"[\p{Mn}\p{Mc}--[\p{Script=Inherited}\p{Script=Hebrew}\p{Script=Arabic}\p{Variation_Selector}]]"
_WORD = regex.compile(rf"{WORD_CHARACTER}+(?:[-']{WORD_CHARACTER}+)*", regex.V1)
#: A run of word characters, no inner hyphen or apostrophe: for :func:`words` to cut finer.
PLAIN_WORD = regex.compile(rf"{WORD_CHARACTER}+", regex.V1)


def script_counts(text: str) -> dict[str, int]:
    """How many characters of ``text`` each script of :data:`SCRIPT_WEIGHTS` has (scripts it lacks left out)."""
    if text.isascii() or not _WEIGHTED_SCRIPT.search(text):
        return {}
    return {name: count for name, pattern in _PATTERNS.items() if (count := len(pattern.findall(text)))}


def weighted_length(text: str) -> float:
    """The length of ``text`` in Latin-character equivalents (its character count where every character counts one)."""
    return len(text) + sum((SCRIPT_WEIGHTS[name][0] - 1.0) * count for name, count in script_counts(text).items())


def length_ratio(length_a: float, length_b: float) -> float:
    """Longer over shorter of two lengths (:func:`weighted_length`), the shorter floored at 1: the score stage's rule."""
    return max(length_a, length_b) / max(min(length_a, length_b), 1.0)


#: Share of a page's main text, in Latin-character equivalents, from which a language other than the page's makes it
#: partly translated: alignment pairs a page identified as the first language with this much of the second as a
#: translation (``align.combined``), and de-duplication never takes such a page for a copy of its original
#: (``extract.dedup``). 250 times what pages written in one language carry on the local site, half what its least
#: translated page has (docs/align.md, "Partly translated pages").
PARTLY_TRANSLATED_SHARE = 0.05


def language_shares(parts: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Each language's share of the ``(text, language)`` parts of a text, in Latin-character equivalents: a kanji
    carries what three or four Latin characters do."""
    lengths: dict[str, float] = {}
    for text, language in parts:
        lengths[language] = lengths.get(language, 0.0) + weighted_length(text)
    total = sum(lengths.values())
    return {language: length / total for language, length in lengths.items()} if total else {}


def token_count(text: str, language: str) -> int:
    """Words of ``text``: whitespace tokens, or for languages written without spaces (Chinese, Japanese,
    Thai, ...) the words of ICU's dictionary-based word segmenter, so the DSI token window means the
    same in every language. Segments without a letter or digit (punctuation, spaces) are not words.
    """
    if base_language(language.split("-")[0]) not in UNSPACED_LANGUAGES:
        return len(text.split())
    return sum(1 for word in WordBreaker(text, bcp47(language)) if any(ch.isalnum() for ch in word))


def has_unspaced_script(text: str) -> bool:
    """Whether ``text`` holds a character of a script written without spaces between words (Chinese, Japanese, Thai)."""
    return not text.isascii() and _UNSPACED_SCRIPT.search(text) is not None


def words(text: str, word: regex.Pattern[str] = _WORD) -> list[str]:
    """The words of ``text`` in any language: matches of ``word`` (runs of letters and digits with inner hyphens and
    apostrophes), and inside a run of a script written without spaces, ICU's dictionary-based word boundaries
    ("パッケージ管理" is パッケージ and 管理, "安装软件包" 安装, 软件 and 包). Terms and texts cut by it match each other."""
    found = word.findall(text)
    if not has_unspaced_script(text):
        return found
    cut: list[str] = []
    for token in found:
        if _UNSPACED_SCRIPT.search(token):
            cut += [part for part in WordBreaker(token, "und") if any(ch.isalnum() for ch in part)]
        else:
            cut.append(token)
    return cut
