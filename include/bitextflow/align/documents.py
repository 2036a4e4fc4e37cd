"""Document alignment by language-neutral URLs (the WMT16 shared-task / Bitextor URL baseline).

Multilingual sites usually publish a translation under the URL of the original with the language
marker swapped: ``/en/guide.html`` and ``/es/guide.html``, ``ch01.en.html`` and ``ch01.es.html``,
``?lang=fr``, ``fr.example.com``, ``/english/`` and ``/espanol/``. Removing every language marker
(:func:`bitextflow.text.urls.url_key`) gives a key that the versions share, and documents in the two
languages with the same key are paired. The rule is precise and costs nothing, which is why it is the
baseline that the content-based aligners have to beat (García-Romero et al., "Smart bilingual focused
crawling", report recall 59.91 for their URL rule on the full WMT16 test set). On the 2,402 WMT16 en-fr
gold pairs, matching only the gold URLs (so no distractors), this module pairs 48.9% of them with no
wrong pair; most misses are single-letter markers (``_e.html``/``_f.html``), which are ambiguous
across languages, and translated paths, which only content can pair.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from bitextflow.records import Document, DocumentPair
from bitextflow.text.languages import language_of_tag
from bitextflow.text.urls import resource_key, url_key

#: Method name written to document-pair records.
METHOD = "url_tokens"


@dataclass(frozen=True)
class _Candidate:
    document: Document
    marked_languages: tuple[str, ...]


def _resolve(candidates: list[_Candidate], language: str, reasons: dict[str, str]) -> Document | None:
    """The one document of a language behind a key, or None when the key is ambiguous.

    Several documents of one language share a key when a site serves a page under both a marked and
    an unmarked URL (``/page`` and ``/en/page``); the one whose marker names its own language is
    the deliberate version. If that does not single one out, none is chosen and all are counted.
    """
    if len(candidates) == 1:
        return candidates[0].document
    own = [c for c in candidates if language in c.marked_languages]
    if len(own) == 1:
        reasons.update((c.document.doc_id, "duplicate_key") for c in candidates if c is not own[0])
        return own[0].document
    reasons.update((c.document.doc_id, "ambiguous_key") for c in candidates)
    return None


def align_by_url(documents: Iterable[Document], lang_a: str, lang_b: str) -> tuple[list[DocumentPair], Counter[str]]:
    """Pair documents of ``lang_a`` and ``lang_b`` whose URLs are equal once language markers go.

    Matching is one-to-one per key (the key includes the neutralised host, so it is per site).
    Every document is either in a pair or counted once under a reason:

    - ``other_language``: in neither language of the pair;
    - ``no_counterpart_a`` / ``no_counterpart_b``: its key has no document in the other language;
    - ``duplicate_key``: another document of its language with the same key was preferred;
    - ``ambiguous_key``: its key has several equally good documents on one side (this document's
      side or its counterpart's), so nothing is paired rather than guessing;
    - ``same_url``: both languages came from one URL (content negotiation or a language switch in
      a cookie); the URL alone proves nothing, so content-based methods must decide.

    Pairs come sorted by key, so the output is the same for the same input in any order.
    """
    pairs, reasons = url_matches(documents, lang_a, lang_b)
    return pairs, Counter(reasons.values())


def url_matches(documents: Iterable[Document], lang_a: str, lang_b: str) -> tuple[list[DocumentPair], dict[str, str]]:
    """:func:`align_by_url` with the reason of each unpaired document, by ``doc_id``."""
    code_a, code_b = language_of_tag(lang_a), language_of_tag(lang_b)
    if code_a == code_b:
        raise ValueError(f"align_by_url needs two different languages, got {lang_a!r} and {lang_b!r}")
    sides: dict[str, defaultdict[str, list[_Candidate]]] = {code_a: defaultdict(list), code_b: defaultdict(list)}
    reasons: dict[str, str] = {}
    for document in documents:
        side = sides.get(language_of_tag(document.language))
        if side is None:
            reasons[document.doc_id] = "other_language"
            continue
        key, languages = url_key(document.url)
        side[key].append(_Candidate(document, tuple(languages)))

    pairs: list[DocumentPair] = []
    for key in sorted(sides[code_a].keys() | sides[code_b].keys()):
        candidates_a, candidates_b = sides[code_a].get(key, []), sides[code_b].get(key, [])
        doc_a = _resolve(candidates_a, code_a, reasons) if candidates_a else None
        doc_b = _resolve(candidates_b, code_b, reasons) if candidates_b else None
        if doc_a is None or doc_b is None:
            if doc_a is not None:
                reasons[doc_a.doc_id] = "ambiguous_key" if candidates_b else "no_counterpart_a"
            if doc_b is not None:
                reasons[doc_b.doc_id] = "ambiguous_key" if candidates_a else "no_counterpart_b"
        elif resource_key(doc_a.url) == resource_key(doc_b.url):
            reasons[doc_a.doc_id] = reasons[doc_b.doc_id] = "same_url"
        else:
            pairs.append(DocumentPair(doc_a.doc_id, doc_b.doc_id, doc_a.url, doc_b.url, METHOD, 1.0))
    return pairs, reasons
