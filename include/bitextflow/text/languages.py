"""Language codes and names, and language identification with CLD2.

Codes and names: :func:`normalise_language` turns a language tag or name (``spa``, ``es-ES``,
``Spanish``, ``español``) into its ISO 639-1 code, and :func:`three_letter_code` gives a language's
ISO 639-2/T code. The tokens that name a language (:func:`language_markers`, also the language markers
that :mod:`bitextflow.text.urls` removes from URLs) come from babel's CLDR data:

- every ISO 639-1 code;
- the English name of each, when it is one word (folded to ASCII: ``Māori`` -> ``maori``);
- for the languages of ``_NATIVE_NAMES``, the language's name for itself and, when accents are all
  that differ, its ASCII spelling (``español``, ``espanol``);
- the ISO 639-2 codes of ``_THREE_LETTER_CODES``.

The few codes and spellings that CLDR lacks or names differently are listed below, each with the reason.
The table is built on first use: reading some fifty CLDR locales takes a fifth of a second, which a
process that only identifies languages does not pay.

Identification: :func:`cld2` and :func:`cld2_top` are the project's CLD2 calls, ``un`` when unknown.
:func:`cld2_languages` and :func:`heliport_languages` are the languages each identifier can name.

One spelling: a language has one code in the project, whoever names it (a user's tag, CLD2, fastText,
heliport, a URL): ISO 639-1 where one exists, else ISO 639-3, through CLDR's aliases, with the few codes
of ``_SPELLINGS`` (:func:`project_code`), and a script other than the language's usual one after it (``zh_Hant``,
``sr_Latn``: :mod:`bitextflow.text.scripts`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping

import pycld2

from bitextflow.text.scripts import (
    base_language,
    in_its_script,
    language_scripts,
    other_scripts,
    split_script,
    with_script,
)

# -- codes and names -------------------------------------------------------------------------------

# Two-letter codes that CLDR names but that are no ISO 639-1 language of their own: ``sh``
# (Serbo-Croatian) is deprecated in ISO 639-1 in favour of ``sr``, ``hr`` and ``bs``.
_DEPRECATED_CODES = frozenset({"sh"})

# English names used instead of CLDR's where CLDR's is several words (a marker is one token) or a newer
# name (``Bangla``, ``Kyrgyz``, ``Odia``, ``Uyghur``: those are kept as other spellings below). ``bh``
# (Bihari languages) is an ISO 639-1 code for a group of languages that CLDR no longer names.
# fmt: off
_ENGLISH_NAMES = {
    "bh": "bihari", "bn": "bengali", "cu": "slavonic", "ff": "fulah", "fy": "frisian", "gd": "gaelic",
    "ho": "motu", "ht": "haitian", "ii": "yi", "ky": "kirghiz", "lu": "luba", "nb": "bokmal",
    "nd": "ndebele", "nn": "nynorsk", "nr": "southndebele", "ny": "chichewa", "or": "oriya",
    "os": "ossetian", "se": "sami", "st": "sotho", "to": "tonga", "ug": "uighur",
}
# fmt: on

# Languages whose own name (CLDR's) marks their pages: the languages of the web sites crawled, where
# a site names its versions in their own languages (``/deutsch/``, ``/español/``).
_NATIVE_NAMES = frozenset(
    "ar be bg bn br bs ca cs cy da de el es et eu fa fi fo fr fy ga gl he hi hr hu hy is it ja ka ko la lb lt lv mk ms mt "
    "nl no pl pt ro ru sk sl sq sr sv sw th tr uk zh".split()
)

# Spellings that sites use and CLDR does not have: romanisations (``nihongo``, ``russkij``), other
# names (``castellano``, ``farsi``, ``filipino``), adjectives (``česky``, ``қазақша``), CLDR's English
# name where the name above is an older one (``bangla``, ``kyrgyz``), and a native name whose ASCII
# spelling is left out (``gàidhlig``, not ``gaidhlig``).
# fmt: off
_OTHER_SPELLINGS = {
    "azerbaycan": "az", "azərbaycanca": "az", "belaruskaya": "be", "balgarski": "bg", "bangla": "bn",
    "cesky": "cs", "česky": "cs", "ellinika": "el", "castellano": "es", "farsi": "fa", "gàidhlig": "gd",
    "ivrit": "he", "hayeren": "hy", "nihongo": "ja", "kartuli": "ka", "қазақша": "kk", "qazaqsha": "kk",
    "hangugeo": "ko", "kurdî": "ku", "kyrgyz": "ky", "makedonski": "mk", "bokmål": "nb", "odia": "or",
    "russkij": "ru", "russkiy": "ru", "slovensky": "sk", "slovene": "sl", "srpski": "sr", "filipino": "tl",
    "uyghur": "ug", "ukrainska": "uk", "zhongwen": "zh",
}
# fmt: on

# ISO 639-2 codes that name a language (babel maps each to its ISO 639-1 code). Codes that are also
# common words or abbreviations in URLs ("may", "per", "cat", "fin", "mar", "mon") are left out, and so
# are the bibliographic codes other than the five of ``_BIBLIOGRAPHIC_CODES``.
_THREE_LETTER_CODES = frozenset(
    "afr amh ara aze bel ben bre bul ces cym cze deu dut ell eng epo eus fao fas fra fre ger gla gle glg guj hau heb hin "
    "hrv hun hye ibo isl ita jpn kat kaz khm kor lav ltz mkd mlt msa mya nep nld nno nob oci pol por ron rum rus slk slv "
    "som spa sqi srp swa swe tam tel tgl tha tur ukr urd vie xho yor zho zul".split()
)
# CLDR maps ``tgl`` to Filipino (``fil``); ISO 639-1 and CLD2 call Tagalog ``tl``.
_THREE_LETTER_EXCEPTIONS = {"tgl": "tl"}

#: ISO 639-2 bibliographic codes; Debian package names use the terminological ones (deu, not ger).
_BIBLIOGRAPHIC_CODES = frozenset({"cze", "dut", "fre", "ger", "rum"})

# One code where identifiers or standards have two: CLD2's withdrawn ISO 639-1 codes for Hebrew and Javanese, and
# the codes CLD2 and fastText answer for Norwegian Bokmål, Tagalog and Pashto, where heliport answers ``nob``, ``tgl``
# and ``pbt`` (which CLDR reads as ``nb``, Filipino ``fil`` and Southern Pashto).
_SPELLINGS = {"iw": "he", "jw": "jv", "nb": "no", "fil": "tl", "pbt": "ps"}

# Characters that split a URL into tokens (a name containing one can never be a marker) and brackets.
_NOT_IN_TOKEN = re.compile(r"[\s/._()-]")


def _ascii_folded(text: str) -> str:
    """``text`` without its accents (``español`` -> ``espanol``); letters such as ``ø`` or ``ə`` stay."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


@functools.cache
def _tables() -> tuple[dict[str, str], dict[str, str]]:
    """Token -> ISO 639-1 code for every token that names a language, and ISO 639-1 -> ISO 639-2/T code."""
    from babel import Locale
    from babel.core import get_global

    english = Locale("en").languages
    aliases = get_global("language_aliases")
    codes = sorted(({code for code in english if len(code) == 2} - _DEPRECATED_CODES) | _ENGLISH_NAMES.keys())

    markers: dict[str, str] = {}
    for code in codes:
        name = _ENGLISH_NAMES.get(code) or _ascii_folded(english[code].lower())
        if not _NOT_IN_TOKEN.search(name):
            markers[name] = code
        if code in _NATIVE_NAMES:
            native = Locale(code).languages[code].lower()
            folded = _ascii_folded(native)
            for spelling in {native, folded} if folded.isascii() else {native}:
                if not _NOT_IN_TOKEN.search(spelling):
                    markers[spelling] = code
    markers.update(_OTHER_SPELLINGS)
    # A code is always its own language, even where it is also another language's name (``yi``).
    markers.update((code, code) for code in codes)
    three_letter = {three: _THREE_LETTER_EXCEPTIONS.get(three) or aliases[three] for three in sorted(_THREE_LETTER_CODES)}
    markers.update(three_letter)
    terminological: dict[str, str] = {}
    for three, two in three_letter.items():
        if three not in _BIBLIOGRAPHIC_CODES:
            terminological.setdefault(two, three)
    return markers, terminological


def project_code(code: str) -> str:
    """The project's code for an identifier's or a standard's code of the same language (``iw`` he, ``nb`` no)."""
    return _SPELLINGS.get(code, code)


def language_markers() -> Mapping[str, str]:
    """Every lower-case token that names a language (code, English name, native name) -> its ISO 639-1 code."""
    return _tables()[0]


def normalise_language(tag: str) -> str:
    """ISO 639-1 code for a language tag or name (``spa``, ``es-ES``, ``Spanish`` -> ``es``).

    Tags that are not in the table are returned lower-cased, so unknown languages still compare.
    """
    markers = _tables()[0]
    lowered = tag.strip().lower()
    if lowered in markers:
        return project_code(markers[lowered])
    primary = re.split(r"[-_]", lowered, maxsplit=1)[0]
    return project_code(markers.get(primary, lowered))


def from_iso639_3(code: str) -> str:
    """An ISO 639-3 code in the project's spelling: the ISO 639-1 code where one exists, through CLDR's aliases
    (``spa`` es; an individual language as its macrolanguage, ``cmn`` zh, ``pes`` fa, ``zsm`` ms, ``ekk`` et; a
    retired code as its successor), else the code itself (``ast``, ``yue``); :func:`project_code` spells it."""
    from babel.core import get_global

    alias = get_global("language_aliases").get(code.lower())
    # CLDR names a script or region in some aliases (hbs -> sr_Latn): the language is the first part
    return project_code(re.split(r"[-_]", alias, maxsplit=1)[0] if alias else code.lower())


class UnsupportedLanguageTag(ValueError):
    """A language tag that names no language, or a variety the project's codes cannot carry."""


def code_of_tag(tag: str) -> str:
    """The project's code for a language tag as a user writes one: an ISO 639-1 or 639-3 code (``es``, ``spa``; an
    individual language as its macrolanguage, ``cmn`` zh) or a BCP 47 tag with a region or a script (``es-ES``,
    ``es_419``, ``zh-Hans``). ISO 639-1 where one exists, else ISO 639-3; a script other than the language's usual one,
    written or implied by the region (CLDR's likely subtags: ``zh-TW`` is ``zh-Hant``), is kept
    (:mod:`bitextflow.text.scripts`: ``zh_Hant``, ``sr_Latn``). A script CLDR never writes the language in raises
    :class:`UnsupportedLanguageTag`."""
    from babel.core import get_global, parse_locale

    try:
        language, region, script, _variant = parse_locale(tag.strip().replace("-", "_"))
    except ValueError:
        raise UnsupportedLanguageTag(f"{tag!r} is no language tag") from None
    language = language.lower()
    code = from_iso639_3(language)  # CLDR's aliases hold for two-letter codes too (iw he, tw ak)
    # a retired code may stand for a language in a script (sh: sr_Latn), a region for the script written there
    alias = get_global("language_aliases").get(language, "")
    implied = re.findall(r"_([A-Z][a-z]{3})", f"{alias} {get_global('likely_subtags').get(f'{code}_{region}', '')}")
    script = (script or next(iter(implied), "")).title() or None
    if script is not None and script not in language_scripts(code):
        known = ", ".join(f"{code}-{each}" for each in sorted(language_scripts(code))) or "none"
        raise UnsupportedLanguageTag(f"{tag!r}: CLDR knows no {code} written in {script} (it knows {known})")
    return with_script(code, script)


@functools.lru_cache(maxsize=1024)
def language_of_tag(tag: str) -> str:
    """:func:`normalise_language` of a tag, a code or a name (``es-ES``, ``eng``, ``English``), with the script where a
    tag names or implies one other than the language's usual one (``hreflang="zh-TW"``, ``/zh-tw/``, a page's
    ``zh_Hant``)."""
    try:
        code = code_of_tag(tag)
    except UnsupportedLanguageTag:
        return normalise_language(tag)
    return code if split_script(code)[1] else normalise_language(tag)


def three_letter_code(language: str) -> str | None:
    """ISO 639-2/T code of a language tag (``es`` -> ``spa``, ``de-AT`` -> ``deu``), None if unknown.

    Debian names bilingual data packages with these codes (``apertium-eng-spa``).
    """
    return _tables()[1].get(normalise_language(language))


# -- identification with CLD2 ----------------------------------------------------------------------

UNKNOWN = "un"
# A site repeats its menus, footers and stock sentences on every page: the answers for the texts seen
# last are kept.
_REMEMBERED_TEXTS = 4096


def _code(cld2_code: str) -> str:
    """The project's code of a CLD2 code, with CLD2's one script of its own (``zh-Hant``: zh_Hant); not its region
    (``sr-ME``, Montenegrin, is Serbian)."""
    if not cld2_code:
        return UNKNOWN
    language, _hyphen, subtag = cld2_code.partition("-")
    return with_script(project_code(language.lower()), subtag if re.fullmatch(r"[A-Z][a-z]{3}", subtag) else None)


@functools.cache
def cld2_languages() -> frozenset[str]:
    """The languages CLD2 can name: not all it has a code for (Ewe, Ossetian and Twi it never answers), nor its scripts
    without a language (``xx-Bugi``, Buginese script)."""
    return frozenset(map(base_language, _cld2_codes()))


@functools.cache
def _cld2_codes() -> frozenset[str]:
    detected = pycld2.DETECTED_LANGUAGES
    return frozenset(_code(code) for name, code in pycld2.LANGUAGES if name in detected and not code.startswith("xx-"))


def script_identifiable(code: str) -> bool:
    """Whether pages in a project code's script are told from pages of its language in its other scripts: by their
    letters (``sr_Latn``), or by CLD2 (``zh_Hant``); not a script that shares its letters (``ja_Hira``, ``zh_Hani``)."""
    language, script = split_script(code)
    return script is None or script in other_scripts(language) or code in _cld2_codes()


# The languages of heliport's model (its wheel 1.0.1's ``confidenceThresholds``; a test compares them with the installed
# one), as it answers them: ISO 639-3, ``hbs`` for Bosnian, Croatian and Serbian together. Kept here, not asked of
# heliport, so that a pair's languages are checked where its environment is not built yet.
HELIPORT_CODES = frozenset(
    "abk ace adz afr aii ame amh amr ara arl arn asm ayr aze bak bar bcl bel ben boa bod bpy bre bul cat cbu cdo ceb ces "
    "che chk cho chr chv chy ckb cmn cnh cor cos cym dan deu dik diq div ell eng epo est eus ewe ext fao fij fin fon fra "
    "fry gaz gla gle glg glv gom grn gsw guj hat hbs heb hin hmo hsb hun hus huu hye ibo ido iku ilo ina isl ita izh jpn "
    "kac kal kan kat kaz kbd kbp kca khm kir kmr knc koi kor kpv krc ksh lao lat lav lin lit liv lmo ltz lud lug luo lus "
    "mal mar mcd mcf mdf mhr mkd mlg mlt mns mon mri mrj msa mwl mya myv nav nep nhn nio nld nno nob nso nus oci olo ori oss "
    "pag pam pan pbt pes pfl pli pms pnb pol pon por que roh ron rus sag sah sat scn sgs shk shn sin sjd sjk sju slk slv "
    "sma sme smj smn sms sna snd som sot spa sqi srd swa swe tam tat tca tel tet tgk tgl tha tir tso tuk tur twi tzh udm "
    "uig ukr ura urd uzn vie vls vol vot war wln xmf yid yor yrk zul".split()
)
#: Codes heliport answers for several languages it does not tell apart, and their members (in the project's spelling).
HELIPORT_CLUSTERS = {"hbs": frozenset({"bs", "hr", "sr"})}
#: Codes identifiers answer for a whole cluster: heliport's ``hbs``, and fastText's ``sh`` (Serbo-Croatian), which
#: lid.176 gives a share of most Bosnian, Croatian and Serbian texts beside their own codes.
_CLUSTER_NAMES = {"hbs": "hbs", "sh": "hbs"}


def cluster_members(code: str) -> frozenset[str]:
    """The languages of the :data:`HELIPORT_CLUSTERS` cluster that ``code`` names as a whole (``hbs``, ``sh``) or
    belongs to (``hr``): Bosnian, Croatian and Serbian; empty for a language of no cluster."""
    if code in _CLUSTER_NAMES:
        return HELIPORT_CLUSTERS[_CLUSTER_NAMES[code]]
    return next((members for members in HELIPORT_CLUSTERS.values() if code in members), frozenset())


def one_language(code: str, expected: str) -> bool:
    """Whether an identifier's ``code`` names ``expected``'s language, in any script, or another language of its
    :data:`HELIPORT_CLUSTERS` group: CLD2 names Croatian text Bosnian or Serbian, and no identifier tells them apart."""
    language, named = base_language(expected), base_language(code)
    return named == language or named in cluster_members(language)


@functools.cache
def heliport_languages() -> frozenset[str]:
    """The languages heliport can name, in the project's spelling (a cluster as its members)."""
    named = {from_iso639_3(code) for code in HELIPORT_CODES - HELIPORT_CLUSTERS.keys()}
    return frozenset(named.union(*HELIPORT_CLUSTERS.values()))


def _printable(text: str) -> str:
    return "".join(ch for ch in text if ch.isprintable() or ch.isspace())


def _detect(text: str, best_effort: bool):
    """The one CLD2 call of the project: ``pycld2.detect``'s (reliable, bytes, details), or None.

    Every text identified here is already text (trafilatura's paragraphs, sentences, a page's text), so
    CLD2 reads it as plain text: its HTML mode would skip anything between ``<`` and ``>`` and decode
    entities, misreading code samples, formulas and a literal ``&amp;``, and it is a fifth slower.
    """
    try:
        return pycld2.detect(text, isPlainText=True, bestEffort=best_effort)
    except pycld2.error:
        # CLD2 rejects some code points (lone surrogates, some controls): drop them, not the text.
        try:
            cleaned = _printable(text).encode("utf-8", "ignore").decode("utf-8")
            return pycld2.detect(cleaned, isPlainText=True, bestEffort=best_effort)
        except pycld2.error:
            return None


def cld2(text: str, best_effort: bool = False) -> tuple[str, bool, list[tuple[str, float]]]:
    """CLD2's top language, whether it is reliable, and the languages with their share of the text.

    The crawler's page LID uses it too; ``best_effort`` is CLD2's own ``bestEffort``.
    """
    found = _detect(text, best_effort)
    if found is None:
        return UNKNOWN, False, []
    reliable, _bytes, details = found
    codes = [in_its_script(_code(code), text) for _name, code, _percent, _score in details]
    top = codes[0] if codes else UNKNOWN
    shares: dict[str, float] = {}
    for code, (_name, _cld2_code, percent, _score) in zip(codes, details, strict=True):
        # a page is in one script of its language: CLD2 calls some of a Simplified Chinese page's paragraphs Traditional
        code = top if base_language(code) == base_language(top) else code
        if code != UNKNOWN and percent > 0:
            shares[code] = shares.get(code, 0.0) + percent / 100
    return top, bool(reliable) and top != UNKNOWN, sorted(shares.items(), key=lambda item: -item[1])


def document_language(text: str) -> tuple[str, bool, list[tuple[str, float]]]:
    """:func:`cld2` of a page's main text, with a language wherever CLD2 finds one in it.

    CLD2 names no language when the bytes it cannot attribute outweigh the rest, as on a translated table of contents
    whose numbers and Latin commands outnumber its words ("D.3.4. Настройка базовой системы": Russian 42% of the
    bytes, the page not named Russian). There CLD2 is asked again in its ``bestEffort`` mode, made for short and mixed
    texts, and the page is in its top language, else in the language with the largest share, unreliable. Four of the
    Russian installation guide's pages were lost to ``un`` this way, each with its translated headings.
    """
    language, reliable, shares = cld2(text)
    if language != UNKNOWN:
        return language, reliable, shares
    language, _reliable, shares = cld2(text, best_effort=True)
    return (shares[0][0] if language == UNKNOWN and shares else language), False, shares


@functools.lru_cache(maxsize=_REMEMBERED_TEXTS)
def cld2_top(text: str) -> tuple[str, bool]:
    """:func:`cld2`'s top language and reliability without the shares: paragraphs and sentences need no more."""
    found = _detect(text, False)
    if found is None:
        return UNKNOWN, False
    reliable, _bytes, details = found
    top = _code(details[0][1]) if details else UNKNOWN
    return top, bool(reliable) and top != UNKNOWN
