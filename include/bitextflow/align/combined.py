"""Document alignment by several methods, combined into one 1-1 pairing per web site.

Every method proposes scored candidate pairs:

==============  ==============================================  =====================================
method          signal                                          module
==============  ==============================================  =====================================
``url_tokens``  URLs equal once language markers go (score 1)   :mod:`bitextflow.align.documents`
``images``      Jaccard of critical images (ILSP-FC)            :mod:`bitextflow.align.structure`
``structure``   fingerprint classifier (ILSP-FC)                :mod:`bitextflow.align.structure`
``tfidf``       dictionary-translated TF-IDF cosine             :mod:`bitextflow.align.content`
``embeddings``  cosine of mean multilingual embeddings          :mod:`bitextflow.align.content`
==============  ==============================================  =====================================

The final pairing is competitive linking (Melamed 2000, "Models of translational equivalence among
words", Computational Linguistics 26(2)), which Buck and Koehn (2016) use for document alignment:
candidates are taken best first and a pair is kept when neither document is paired yet. Scores of
different methods do not share a scale (a URL match is certain, a cosine of 0.4 may be excellent),
so "best" is by method first, in the configured order, then by score; each kept pair records the
method and score that chose it. Candidates only ever join documents of one site, so the global
greedy pass is a per-site one.

Partly translated pages: a translation whose navigation and some paragraphs are translated and the
rest left in the original is identified as the original's language when most of its text is
untranslated, and then has no counterpart. A second pass takes the pages of the first language left
unpaired that have at least ``MIN_TRANSLATED_SHARE`` of their main text in the second language
(paragraph languages), each as a page of the second language made of its translated paragraphs, and
pairs them with the first-language pages left unpaired. Its candidates come from the same methods run
over the whole site again, so that what the methods learn from the site (TF-IDF weights, the
structure classifier, the embeddings' language means) is learnt from all of it, not from the few
pages left over. The first pass is unchanged by it: pages whose language is their own pair as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from bitextflow.align.content import EMBEDDINGS_METHOD, TFIDF_METHOD, embedding_pairs, tfidf_pairs
from bitextflow.align.dictionary import BilingualDictionary, load_dictionary
from bitextflow.align.documents import METHOD as URL_METHOD
from bitextflow.align.documents import url_matches
from bitextflow.align.embedding import Encoder
from bitextflow.align.site_naming import DISAGREEMENT_REFUSED, SiteNaming, mutual_best, refusal, with_margin
from bitextflow.align.structure import IMAGES_METHOD, STRUCTURE_METHOD, image_pairs, structure_pairs
from bitextflow.config import AlignConfig
from bitextflow.records import Document, DocumentPair
from bitextflow.text.languages import language_of_tag
from bitextflow.text.lengths import PARTLY_TRANSLATED_SHARE, language_shares
from bitextflow.text.urls import url_key

#: In the order of the default priority: precise and cheap first, images last (site icons mislead them).
DOCUMENT_METHODS = (URL_METHOD, TFIDF_METHOD, EMBEDDINGS_METHOD, STRUCTURE_METHOD, IMAGES_METHOD)
#: Pairs the site declares (hreflang alternates), linked right after the URL-token pairs when declarations are given.
DECLARED_METHOD = "declared"
#: The methods that compare content, which the site's own naming of a page's counterpart overrules.
CONTENT_METHODS = (TFIDF_METHOD, EMBEDDINGS_METHOD, STRUCTURE_METHOD, IMAGES_METHOD)
#: The content methods that compare text or layout: on a partial crawl a content pair must be the mutual best of each.
AGREEING_METHODS = (TFIDF_METHOD, EMBEDDINGS_METHOD, STRUCTURE_METHOD)
#: Margin a content candidate needs over the runner-up of each of its pages, by method, and whether content methods
#: must agree on a partial crawl: ``align.document_margins`` and ``align.partial_crawl_agreement``'s defaults, chosen
#: by leave-one-site-out cross-validation over budgeted crawls (docs/align.md, "Partial crawls").
DEFAULT_MARGINS: dict[str, float] = AlignConfig().document_margins
DEFAULT_PARTIAL_CRAWL_AGREEMENT: bool = AlignConfig().partial_crawl_agreement
#: Lowest score a candidate of each method needs, chosen on the local site (docs/align.md).
DEFAULT_MIN_SCORES = {URL_METHOD: 1.0, IMAGES_METHOD: 0.5, STRUCTURE_METHOD: 0.5, TFIDF_METHOD: 0.2, EMBEDDINGS_METHOD: 0.3}
DEFAULT_TOP_K = 10
#: Share of a first-language page's main text (its main-content paragraphs) in the second language from which the
#: page is taken as a partly translated page of the second language.
MIN_TRANSLATED_SHARE = PARTLY_TRANSLATED_SHARE
#: The reason of a partly translated page that neither pass paired.
PARTLY_TRANSLATED_UNPAIRED = "no_counterpart_partly_translated"


@dataclass
class AlignmentReport:
    """What :func:`align_documents` found besides the pairs: unpaired documents by reason, candidates
    proposed and pairs kept per method (both passes), how the structure method scored (``classifier``/``rule``,
    first pass), and how many pairs have a partly translated second-language page (second pass)."""

    unmatched: Counter[str] = field(default_factory=Counter)
    candidates: Counter[str] = field(default_factory=Counter)
    kept: Counter[str] = field(default_factory=Counter)
    structure_scorer: str = ""
    partly_translated: int = 0
    #: content candidates refused because the site names a page's counterpart otherwise, by reason (first pass)
    refused: Counter[str] = field(default_factory=Counter)
    #: declared pairs that content contradicts (a page's clear content match is another page): not linked
    declared_disagreements: int = 0


def align_documents(
    documents: Iterable[Document],
    lang_a: str,
    lang_b: str,
    methods: Sequence[str] = (URL_METHOD,),
    *,
    min_scores: dict[str, float] | None = None,
    top_k: int = DEFAULT_TOP_K,
    dictionary: BilingualDictionary | None = None,
    encoder: Encoder | None = None,
    declared: Mapping[str, Mapping[str, str]] | None = None,
    unfetched: Collection[str] = (),
    margins: Mapping[str, float] | None = None,
    partial_crawl_agreement: bool = DEFAULT_PARTIAL_CRAWL_AGREEMENT,
) -> tuple[list[DocumentPair], AlignmentReport]:
    """1-1 document pairs of ``lang_a`` and ``lang_b`` by ``methods`` (in priority order), then the pairs of
    partly translated ``lang_b`` pages identified as ``lang_a`` (the second pass, module docstring).

    ``declared`` (URL -> {language: URL}, the crawl's declared language versions) adds the pairs the site declares,
    linked after the URL-token pairs unless content contradicts them; content candidates that the site's URL pattern
    (with ``unfetched``, the URLs the crawl knew but did not fetch) or declarations contradict, or that lack the
    method's margin over the runner-up (``margins``, default :data:`DEFAULT_MARGINS`), or that on a site ``unfetched``
    shows partial are not the mutual best of every method of :data:`AGREEING_METHODS` that ran
    (``partial_crawl_agreement``), are not linked (:mod:`bitextflow.align.site_naming`).

    ``lang_a`` is the language pages are translated from (the source of a pair config): untranslated text
    is in it. ``tfidf`` uses ``dictionary`` (None: words that match themselves only); ``embeddings`` needs
    ``encoder``. Every document ends in a pair or once in ``report.unmatched``: ``other_language``;
    ``empty_document`` (no text, when a content or structure method ran); ``no_counterpart_partly_translated``;
    the URL method's reason when it ran (``no_counterpart_a``, ``ambiguous_key``, ...); else
    ``no_counterpart_a``/``_b``. With ``methods=["url_tokens"]`` and no partly translated page the result is
    :func:`bitextflow.align.documents.align_by_url`'s.
    """
    unknown = [m for m in methods if m not in DOCUMENT_METHODS]
    if unknown or not methods:
        raise ValueError(f"document methods must be a non-empty list of {', '.join(DOCUMENT_METHODS)}; got {list(methods)}")
    if EMBEDDINGS_METHOD in methods and encoder is None:
        raise ValueError("the embeddings document method needs an encoder")
    linking = _Linking(
        language_of_tag(lang_a), language_of_tag(lang_b), methods, DEFAULT_MIN_SCORES | (min_scores or {}), top_k,
        dictionary, encoder, AlignmentReport(), declared or {}, frozenset(unfetched), DEFAULT_MARGINS | dict(margins or {}),
        partial_crawl_agreement,
    )  # fmt: skip
    report = linking.report
    documents = list(documents)
    proposals, url_reasons, report.structure_scorer = linking.proposals(documents)
    pairs = linking.link(proposals)
    paired = {doc_id for pair in pairs for doc_id in (pair.doc_id_a, pair.doc_id_b)}
    unpaired_a = {
        doc.doc_id: doc for doc in documents if doc.doc_id not in paired and language_of_tag(doc.language) == linking.code_a
    }
    partly = {
        doc_id: translated_part(unpaired_a[doc_id], linking.code_b) for doc_id in partly_translated(unpaired_a, linking.code_b)
    }
    if partly:
        originals = unpaired_a.keys() - partly.keys()
        proposals, _reasons, _scorer = linking.proposals([partly.get(doc.doc_id, doc) for doc in documents])
        second = linking.link({
            method: [p for p in candidates if p.doc_id_b in partly and p.doc_id_a in originals]
            for method, candidates in proposals.items()
        })  # fmt: skip
        report.partly_translated = len(second)
        pairs = sorted(pairs + second, key=lambda p: (p.url_a, p.url_b))
        paired |= {doc_id for pair in second for doc_id in (pair.doc_id_a, pair.doc_id_b)}
        url_reasons |= {doc_id: PARTLY_TRANSLATED_UNPAIRED for doc_id in partly.keys() - paired}
    report.unmatched.update(_unpaired_reason(doc, url_reasons, linking) for doc in documents if doc.doc_id not in paired)
    return pairs, report


def _unpaired_reason(document: Document, url_reasons: dict[str, str], linking: _Linking) -> str:
    """Why ``document`` is in no pair (``url_reasons``: the URL method's, and the partly translated pages')."""
    reason = url_reasons.get(document.doc_id)
    if reason in ("other_language", PARTLY_TRANSLATED_UNPAIRED):
        return reason
    if document.doc_id in linking.refused_documents:
        return linking.refused_documents[document.doc_id]
    if set(linking.methods) - {URL_METHOD} and not any(text.strip() for _type, text in document.content_paragraphs):
        return "empty_document"  # the content and structure methods had no text to compare
    if URL_METHOD in linking.methods and reason is not None:
        return reason
    return "no_counterpart_a" if language_of_tag(document.language) == linking.code_a else "no_counterpart_b"


@dataclass
class _Linking:
    """The methods' candidates over a site's documents, and their competitive linking (a pass of
    :func:`align_documents`); the candidates linked and the pairs kept are counted in ``report``."""

    code_a: str
    code_b: str
    methods: Sequence[str]
    scores: dict[str, float]
    top_k: int
    dictionary: BilingualDictionary | None
    encoder: Encoder | None
    report: AlignmentReport
    declared: Mapping[str, Mapping[str, str]]
    unfetched: Collection[str]
    margins: Mapping[str, float]
    partial_crawl_agreement: bool
    #: documents whose content candidates the site contradicted, with the reason (first pass)
    refused_documents: dict[str, str] = field(default_factory=dict)

    def proposals(self, documents: Sequence[Document]) -> tuple[dict[str, list[DocumentPair]], dict[str, str], str]:
        """Each method's candidate pairs of ``documents`` by their languages (the declared pairs under
        :data:`DECLARED_METHOD`; content candidates the site contradicts, or without their margin, left out), the URL
        method's reason for each document it did not pair, and the structure scorer that ran (empty when it did not)."""
        methods, scores, top_k = self.methods, self.scores, self.top_k
        url_pairs, url_reasons = url_matches(documents, self.code_a, self.code_b)
        docs_a = [doc for doc in documents if language_of_tag(doc.language) == self.code_a]
        docs_b = [doc for doc in documents if language_of_tag(doc.language) == self.code_b]
        proposals: dict[str, list[DocumentPair]] = {URL_METHOD: url_pairs}
        structure_scorer = ""
        if IMAGES_METHOD in methods:
            proposals[IMAGES_METHOD] = image_pairs(docs_a, docs_b, scores[IMAGES_METHOD])
        if STRUCTURE_METHOD in methods:
            proposals[STRUCTURE_METHOD], structure_scorer = structure_pairs(
                docs_a, docs_b, url_pairs, scores[STRUCTURE_METHOD], top_k
            )
        if TFIDF_METHOD in methods:
            proposals[TFIDF_METHOD] = tfidf_pairs(docs_a, docs_b, self.dictionary, scores[TFIDF_METHOD], top_k)
        if EMBEDDINGS_METHOD in methods and self.encoder is not None:  # checked by align_documents: the method needs one
            proposals[EMBEDDINGS_METHOD] = embedding_pairs(docs_a, docs_b, self.encoder, scores[EMBEDDINGS_METHOD], top_k)
        self._as_the_site_names_them(documents, proposals, url_pairs)
        return proposals, url_reasons, structure_scorer

    def _as_the_site_names_them(
        self, documents: Sequence[Document], proposals: dict[str, list[DocumentPair]], url_pairs: Sequence[DocumentPair]
    ) -> None:
        """Content candidates without the site's contradiction, with their margin and, on a partial crawl, the agreement
        of the text methods; the declared pairs that content does not contradict (:mod:`bitextflow.align.site_naming`)."""
        naming = SiteNaming.of(documents, url_pairs, self.unfetched, (self.code_a, self.code_b))
        languages = {doc.doc_id: language_of_tag(doc.language) for doc in documents}
        agreeing = [mutual_best(proposals[m]) for m in AGREEING_METHODS if m in proposals]
        agreed = set.intersection(*agreeing) if agreeing and self.partial_crawl_agreement else None
        for method in [m for m in CONTENT_METHODS if m in proposals]:
            kept = []
            for pair in with_margin(proposals[method], self.margins.get(method, 0.0)):
                reason = refusal(pair, naming, self.declared, languages)
                if (
                    not reason
                    and agreed is not None
                    and naming.partial(pair.url_a)
                    and (pair.doc_id_a, pair.doc_id_b) not in agreed
                ):
                    reason = DISAGREEMENT_REFUSED
                if not reason:
                    kept.append(pair)
                    continue
                self.report.refused[reason] += 1
                self.refused_documents.setdefault(pair.doc_id_a, reason)
                self.refused_documents.setdefault(pair.doc_id_b, reason)
            proposals[method] = kept
        if self.declared:
            proposals[DECLARED_METHOD] = self._declared_pairs(documents, proposals)

    def _declared_pairs(self, documents: Sequence[Document], proposals: dict[str, list[DocumentPair]]) -> list[DocumentPair]:
        """The pairs of ``documents`` that the site declares, less those content contradicts: where the first content
        method's best candidate of either page (with its margin) is another page (counted in the report)."""
        by_url = {doc.url: doc for doc in documents}
        language = {doc.doc_id: language_of_tag(doc.language) for doc in documents}
        declared: dict[tuple[str, str], tuple[Document, Document]] = {}
        for doc in documents:
            other_language = {self.code_a: self.code_b, self.code_b: self.code_a}.get(language[doc.doc_id])
            other = by_url.get(self.declared.get(doc.url, {}).get(other_language or "", ""))
            if other_language is not None and other is not None and language[other.doc_id] == other_language:
                doc_a, doc_b = (doc, other) if other_language == self.code_b else (other, doc)
                declared[doc_a.doc_id, doc_b.doc_id] = (doc_a, doc_b)
        best: dict[str, str] = {}
        content = next((proposals[m] for m in self.methods if m in CONTENT_METHODS and m in proposals), [])
        for pair in sorted(content, key=lambda p: -p.score):
            best.setdefault(pair.doc_id_a, pair.doc_id_b)
            best.setdefault(pair.doc_id_b, pair.doc_id_a)
        pairs = []
        for (id_a, id_b), (doc_a, doc_b) in sorted(declared.items()):
            if best.get(id_a, id_b) != id_b or best.get(id_b, id_a) != id_a:
                self.report.declared_disagreements += 1
            else:
                pairs.append(DocumentPair(id_a, id_b, doc_a.url, doc_b.url, DECLARED_METHOD, 1.0))
        return pairs

    def link(self, proposals: dict[str, list[DocumentPair]]) -> list[DocumentPair]:
        """1-1 pairs of the methods' ``proposals`` (:func:`competitive_linking` in the methods' order)."""
        order = list(dict.fromkeys(self.methods))
        if DECLARED_METHOD in proposals:  # the site's word, after the URL pattern's and before content's
            order.insert(1 if order[0] == URL_METHOD else 0, DECLARED_METHOD)
        self.report.candidates.update({method: len(proposals[method]) for method in order})
        pairs = competitive_linking([proposals[method] for method in order])
        self.report.kept.update(pair.method for pair in pairs)
        return pairs


def language_share(document: Document, language: str) -> float:
    """Share of the text of ``document``'s main-content paragraphs identified as ``language`` (its title aside:
    extraction gives the title the document's language without identifying it), in Latin-character equivalents
    (:func:`bitextflow.text.lengths.weighted_length`): a kanji carries what three or four Latin characters do, and the
    Japanese chapter of package tables the Reference has (``ch07.ja.html``) is 19% Japanese by characters, 27% by
    what they say. Text in Latin, Cyrillic or Greek counts as before, character by character."""
    main = (p for p in document.paragraphs if not p.boilerplate and p.type != "title")
    return language_shares((p.text, language_of_tag(p.language)) for p in main).get(language, 0.0)


def partly_translated(documents: Mapping[str, Document], language: str) -> list[str]:
    """The ids of ``documents`` (pages identified as the first language) that hold at least :data:`MIN_TRANSLATED_SHARE`
    of ``language``, save where two of them have one URL once language markers go (``/en/ch04s02.html`` and
    ``/vi/ch04s02.html``): of those, only the one holding more of ``language`` is a translation, the other its original.
    An original can hold that much of the second language too (the site's language switcher, "English Tiếng Việt",
    identified as Vietnamese on a short page of the Installation Guide), and taken as a translation it was paired with
    another English page while its own translation went unpaired."""
    shares = {doc_id: language_share(doc, language) for doc_id, doc in documents.items()}
    translated = {doc_id: share for doc_id, share in shares.items() if share >= MIN_TRANSLATED_SHARE}
    most_translated: dict[str, str] = {}
    for doc_id in sorted(translated, key=translated.__getitem__, reverse=True):
        most_translated.setdefault(url_key(documents[doc_id].url)[0], doc_id)
    return sorted(most_translated.values())


def translated_part(document: Document, language: str) -> Document:
    """A partly translated ``document`` as a page of ``language``: its title and its paragraphs in ``language``, what
    the methods compare with its original (its untranslated paragraphs would match any page in their language)."""
    paragraphs = tuple(p for p in document.paragraphs if p.type == "title" or language_of_tag(p.language) == language)
    return replace(document, language=language, paragraphs=paragraphs)


def competitive_linking(proposals: Sequence[Sequence[DocumentPair]]) -> list[DocumentPair]:
    """1-1 pairs from candidate lists in priority order, each list best score first; a candidate is
    kept when neither of its documents is taken. Sorted by URLs, so the result does not depend on input order."""
    paired: set[str] = set()
    pairs: list[DocumentPair] = []
    for candidates in proposals:
        for pair in sorted(candidates, key=lambda p: (-p.score, p.url_a, p.url_b)):
            if pair.doc_id_a not in paired and pair.doc_id_b not in paired:
                paired.update((pair.doc_id_a, pair.doc_id_b))
                pairs.append(pair)
    return sorted(pairs, key=lambda p: (p.url_a, p.url_b))


def align_configured(
    documents: Iterable[Document],
    lang_a: str,
    lang_b: str,
    config: AlignConfig,
    declared: Mapping[str, Mapping[str, str]] | None = None,
    unfetched: Collection[str] = (),
) -> tuple[list[DocumentPair], AlignmentReport]:
    """:func:`align_documents` with the methods, thresholds and margins of ``align`` in a pair config (and the crawl's
    declared versions and unfetched URLs); loads the pair's dictionary for ``tfidf`` and the encoder
    (``align.encoder_model``) for ``embeddings``."""
    methods = config.document_methods
    dictionary = load_dictionary(lang_a, lang_b) if TFIDF_METHOD in methods else None
    encoder = None
    if EMBEDDINGS_METHOD in methods:
        from bitextflow.models import SentenceEncoder  # torch is imported only when the method runs

        encoder = SentenceEncoder.from_path(config.encoder_model)
    min_scores = {
        IMAGES_METHOD: config.min_image_jaccard,
        STRUCTURE_METHOD: config.min_structure_score,
        TFIDF_METHOD: config.min_tfidf_score,
        EMBEDDINGS_METHOD: config.min_embedding_score,
    }
    return align_documents(
        documents, lang_a, lang_b, methods, min_scores=min_scores, top_k=config.document_candidates,
        dictionary=dictionary, encoder=encoder, declared=declared, unfetched=unfetched, margins=config.document_margins,
        partial_crawl_agreement=config.partial_crawl_agreement,
    )  # fmt: skip
