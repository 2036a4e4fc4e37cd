"""Scripts: the script a language is written in, and the project's codes for a language in another one.

Some languages are written in more than one script (Serbian in Cyrillic and Latin, Chinese in Simplified and
Traditional characters, Uzbek in Latin and Cyrillic). A corpus in one of them is of no use to whoever wants the other,
so the project names a language written in a script other than its usual one (CLDR's likely script: ``sr`` Cyrl,
``zh`` Hans) by its code, :data:`SCRIPT_JOINER` and the ISO 15924 script: ``sr_Latn``, ``zh_Hant``. A language in its
usual script keeps its bare code (``sr``, ``zh``), as it always had. The joiner is not BCP 47's hyphen, because a pair's
name joins its two codes with a hyphen (``en-zh_Hant``) in storage keys, release paths and DAG ids; OPUS names its
corpora the same way. A release writes BCP 47 where a format wants it (:func:`bcp47`: TMX's ``xml:lang="zh-Hant"``).

Which script a text is in is read from its letters (:func:`script_of_text`), except Simplified against Traditional
Chinese, which share most characters and which CLD2 tells apart.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

#: Between a language's code and a script other than its usual one: ``sr_Latn``, ``zh_Hant``.
SCRIPT_JOINER = "_"

# Scripts whose letters Unicode names otherwise than CLDR names the script (the first word of a letter's name)
_HAN = frozenset({"CJK"})
# fmt: off
_SCRIPT_LETTERS = {
    "Hans": _HAN, "Hant": _HAN, "Hani": _HAN, "Jpan": _HAN | {"HIRAGANA", "KATAKANA"}, "Kore": _HAN | {"HANGUL"},
    "Beng": frozenset({"BENGALI"}), "Orya": frozenset({"ORIYA"}),
}
# fmt: on
_WIDTHS = frozenset({"FULLWIDTH", "HALFWIDTH"})
#: Characters outside Latin and its extensions, general punctuation and the full-width forms: the only ones that can be
#: letters of another script (most texts have none, and are not looked at one letter at a time).
BEYOND_LATIN = re.compile(r"[^\x00-\u024f\u1e00-\u1eff\u2000-\u206f\uff00-\uff5e]")
# A language's script is another than its usual one where the usual one holds less than this share of its letters: a
# Cyrillic page quoting Latin commands and file names stays in Cyrillic.
_USUAL_SCRIPT_SHARE = 0.1


def split_script(code: str) -> tuple[str, str | None]:
    """A project code's language and script (``zh_Hant`` -> zh, Hant; ``es`` -> es, None)."""
    language, _joiner, script = code.partition(SCRIPT_JOINER)
    return language, script or None


def base_language(code: str) -> str:
    """A project code without its script (``sr_Latn`` -> sr): what tools that know languages, not scripts, are given
    (a stemmer, a sentence splitter, a word segmenter)."""
    return code.partition(SCRIPT_JOINER)[0]


def bcp47(code: str) -> str:
    """A project code as a BCP 47 tag (``zh_Hant`` -> zh-Hant), for formats that name languages so (TMX, HTML)."""
    return code.replace(SCRIPT_JOINER, "-")


@functools.cache
def _cldr_scripts() -> dict[str, frozenset[str]]:
    from babel.core import get_global

    scripts: dict[str, set[str]] = {}
    for key, value in get_global("likely_subtags").items():
        for tag in (key, value):
            if found := re.match(r"([a-z]{2,3})_([A-Z][a-z]{3})", tag):
                scripts.setdefault(found[1], set()).add(found[2])
    return {language: frozenset(written) for language, written in scripts.items() if language != "und"}


@functools.lru_cache(maxsize=512)
def likely_script(code: str) -> str | None:
    """The script of a project code (``zh_Hant`` Hant), else CLDR's likely script of its language (``ja`` Jpan, ``sr``
    Cyrl, ``ckb`` Arab); None if CLDR does not know the language."""
    from babel.core import get_global

    language, script = split_script(code)
    if script is not None:
        return script
    parts = get_global("likely_subtags").get(language, "").split("_")
    return parts[1] if len(parts) > 1 else None


def language_scripts(language: str) -> frozenset[str]:
    """The scripts CLDR knows ``language`` written in (``sr``: Cyrl, Latn), its likely one at least."""
    usual = likely_script(language)
    return _cldr_scripts().get(language, frozenset()) | ({usual} if usual else set())


def with_script(language: str, script: str | None) -> str:
    """The project code of ``language`` written in ``script``: the bare code for its usual script (or none)."""
    return language if script is None or script == likely_script(language) else f"{language}{SCRIPT_JOINER}{script}"


@functools.lru_cache(maxsize=8192)  # a page has a few hundred distinct letters; their names are looked up once
def letter_script(letter: str) -> str:
    """The script of a letter as the first word of its Unicode name (LATIN, CYRILLIC, CJK), its width left out."""
    words = unicodedata.name(letter, "").replace("-", " ").split()
    return (words[1] if words[:1] and words[0] in _WIDTHS and len(words) > 1 else words[0]) if words else ""


@functools.lru_cache(maxsize=512)
def script_letters(script: str) -> frozenset[str] | None:
    """What :func:`letter_script` says of the letters of an ISO 15924 script; None for a script CLDR does not name."""
    from babel import Locale

    name = Locale("en").scripts.get(script)
    return _SCRIPT_LETTERS.get(script) or (frozenset({name.upper().split()[0]}) if name else None)


@functools.lru_cache(maxsize=512)
def written_in(code: str) -> frozenset[str] | None:
    """The letters (:func:`letter_script`) of the script a project code is written in; None when CLDR does not know it."""
    script = likely_script(code)
    return script_letters(script) if script else None


@functools.lru_cache(maxsize=512)
def may_be_written_in(code: str) -> frozenset[str] | None:
    """The letters of every script a text an identifier names ``code`` may be in: the code's script where it names one
    (``sr_Latn``), else every script CLDR knows its language in (``uz``: Latin, Cyrillic, Arabic); None when CLDR knows
    none of them."""
    if split_script(code)[1]:
        return written_in(code)
    letters = [script_letters(script) for script in language_scripts(code)]
    return frozenset().union(*(found for found in letters if found)) or None


@functools.lru_cache(maxsize=512)
def other_scripts(language: str) -> dict[str, frozenset[str]]:
    """The scripts other than its usual one that ``language`` is written in and that its letters tell apart (not
    Traditional from Simplified Chinese, nor hiragana from Japanese), with their letters."""
    usual = written_in(language) or frozenset()
    others = {script: script_letters(script) for script in language_scripts(language) - {likely_script(language)}}
    return {script: letters for script, letters in others.items() if letters and not letters <= usual}


def script_of_text(language: str, text: str) -> str | None:
    """The script, other than its usual one, that ``text`` in ``language`` is written in: the one of
    :func:`other_scripts` with the most letters, where the usual script holds less than a tenth of them; None when
    the text is in the usual script."""
    others = other_scripts(language)
    usual = written_in(language)
    if not others or usual is None:
        return None
    beyond_latin = BEYOND_LATIN.findall(text)
    # looked at one letter at a time only where the text has a letter of another script (most have none)
    present = {letter_script(ch) for ch in set(beyond_latin) if ch.isalpha()} | {"LATIN"}
    if not any(name in present for names in others.values() for name in names):
        return None
    beyond = Counter(letter_script(ch) for ch in beyond_latin if ch.isalpha())
    latin = sum(ch.isalpha() for ch in text) - sum(beyond.values())

    def letters(names: frozenset[str]) -> int:
        return sum(beyond[name] for name in names) + (latin if "LATIN" in names else 0)

    if letters(usual) >= _USUAL_SCRIPT_SHARE * (latin + sum(beyond.values())):
        return None
    script, most = max(((script, letters(names)) for script, names in others.items()), key=lambda found: found[1])
    return script if most else None


def in_its_script(code: str, text: str) -> str:
    """A project code for a language an identifier named in ``text`` (``sr``), with the script the text is written in
    where it is another than the language's usual one (``sr_Latn``); a code that has its script already stays."""
    language, script = split_script(code)
    return code if script is not None else with_script(language, script_of_text(language, text))
