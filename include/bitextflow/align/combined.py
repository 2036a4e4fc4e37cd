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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bitextflow.align.content import EMBEDDINGS_METHOD, TFIDF_METHOD, embedding_pairs, tfidf_pairs
from bitextflow.align.dictionary import BilingualDictionary, load_dictionary
from bitextflow.align.documents import METHOD as URL_METHOD
from bitextflow.align.documents import url_matches
from bitextflow.align.embedding import Encoder
from bitextflow.align.structure import IMAGES_METHOD, STRUCTURE_METHOD, image_pairs, structure_pairs
from bitextflow.config import AlignConfig
from bitextflow.records import Document, DocumentPair
from bitextflow.text.languages import normalise_language

#: In the order of the default priority: precise and cheap first, images last (site icons mislead them).
DOCUMENT_METHODS = (URL_METHOD, TFIDF_METHOD, EMBEDDINGS_METHOD, STRUCTURE_METHOD, IMAGES_METHOD)
#: Lowest score a candidate of each method needs, chosen on the local site (docs/align.md).
DEFAULT_MIN_SCORES = {URL_METHOD: 1.0, IMAGES_METHOD: 0.5, STRUCTURE_METHOD: 0.5, TFIDF_METHOD: 0.2, EMBEDDINGS_METHOD: 0.3}
DEFAULT_TOP_K = 10


@dataclass
class AlignmentReport:
    """What :func:`align_documents` found besides the pairs: unpaired documents by reason, candidates
    proposed and pairs kept per method, and how the structure method scored (``classifier``/``rule``)."""

    unmatched: Counter[str] = field(default_factory=Counter)
    candidates: Counter[str] = field(default_factory=Counter)
    kept: Counter[str] = field(default_factory=Counter)
    structure_scorer: str = ""


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
) -> tuple[list[DocumentPair], AlignmentReport]:
    """1-1 document pairs of ``lang_a`` and ``lang_b`` by ``methods`` (in priority order).

    ``tfidf`` uses ``dictionary`` (None: words that match themselves only); ``embeddings`` needs
    ``encoder``. Every document ends in a pair or once in ``report.unmatched``: ``other_language``;
    ``empty_document`` (no text, when a content or structure method ran); the URL method's reason
    when it ran (``no_counterpart_a``, ``ambiguous_key``, ...); else ``no_counterpart_a``/``_b``.
    With ``methods=["url_tokens"]`` the result is :func:`bitextflow.align.documents.align_by_url`'s.
    """
    unknown = [m for m in methods if m not in DOCUMENT_METHODS]
    if unknown or not methods:
        raise ValueError(f"document methods must be a non-empty list of {', '.join(DOCUMENT_METHODS)}; got {list(methods)}")
    if EMBEDDINGS_METHOD in methods and encoder is None:
        raise ValueError("the embeddings document method needs an encoder")
    scores = DEFAULT_MIN_SCORES | (min_scores or {})
    code_a, code_b = normalise_language(lang_a), normalise_language(lang_b)
    documents = list(documents)
    url_pairs, url_reasons = url_matches(documents, code_a, code_b)
    docs_a = [doc for doc in documents if normalise_language(doc.language) == code_a]
    docs_b = [doc for doc in documents if normalise_language(doc.language) == code_b]

    report = AlignmentReport()
    proposals: dict[str, list[DocumentPair]] = {URL_METHOD: url_pairs}
    if IMAGES_METHOD in methods:
        proposals[IMAGES_METHOD] = image_pairs(docs_a, docs_b, scores[IMAGES_METHOD])
    if STRUCTURE_METHOD in methods:
        proposals[STRUCTURE_METHOD], report.structure_scorer = structure_pairs(
            docs_a, docs_b, url_pairs, scores[STRUCTURE_METHOD], top_k
        )
    if TFIDF_METHOD in methods:
        proposals[TFIDF_METHOD] = tfidf_pairs(docs_a, docs_b, dictionary, scores[TFIDF_METHOD], top_k)
    if EMBEDDINGS_METHOD in methods and encoder is not None:  # checked above: the method needs one
        proposals[EMBEDDINGS_METHOD] = embedding_pairs(docs_a, docs_b, encoder, scores[EMBEDDINGS_METHOD], top_k)

    report.candidates.update({method: len(proposals[method]) for method in methods})
    pairs = competitive_linking([proposals[method] for method in dict.fromkeys(methods)])
    report.kept.update(pair.method for pair in pairs)
    paired = {doc_id for pair in pairs for doc_id in (pair.doc_id_a, pair.doc_id_b)}
    content_methods = set(methods) - {URL_METHOD}
    for doc in documents:
        if doc.doc_id in paired:
            continue
        if doc.doc_id in url_reasons and url_reasons[doc.doc_id] == "other_language":
            reason = "other_language"
        elif content_methods and not any(text.strip() for _type, text in doc.content_paragraphs):
            reason = "empty_document"
        elif URL_METHOD in methods and doc.doc_id in url_reasons:
            reason = url_reasons[doc.doc_id]
        else:
            reason = "no_counterpart_a" if normalise_language(doc.language) == code_a else "no_counterpart_b"
        report.unmatched[reason] += 1
    return pairs, report


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
    documents: Iterable[Document], lang_a: str, lang_b: str, config: AlignConfig
) -> tuple[list[DocumentPair], AlignmentReport]:
    """:func:`align_documents` with the methods and thresholds of ``align`` in a pair config; loads the
    pair's dictionary for ``tfidf`` and the encoder (``align.encoder_model``) for ``embeddings``."""
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
        dictionary=dictionary, encoder=encoder,
    )  # fmt: skip
