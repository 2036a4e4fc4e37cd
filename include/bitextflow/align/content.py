"""Document pairs by content: dictionary-translated TF-IDF and multilingual embeddings.

- **TF-IDF** after Buck and Koehn (2016), "Quick and reliable document alignment via TF/IDF-weighted
  cosine distance", WMT16 shared task on bilingual document alignment. They machine-translate one
  side and compare TF-IDF vectors by cosine; here the translation is word for word with the pair's
  bilingual dictionary (:mod:`bitextflow.align.dictionary`): every word of side b becomes the side-a
  words it can translate to, and words that may stand for themselves (numbers, names, cognates:
  :func:`bitextflow.align.lexical.matches_itself`) are kept as they are, so a pair with no
  dictionary still pairs documents by shared names and numbers. Words are folded and prefix-stemmed
  as in the Hunalign-style sentence aligner. IDF is fitted per site on both sides.
- **Embeddings**: a document is the mean of the multilingual sentence embeddings of its title and
  first main paragraphs (the project's multilingual-e5-small encoder), compared by cosine after
  removing each language's mean vector (Libovický, Rosa and Fraser 2020, "On the language neutrality
  of pre-trained multilingual representations", Findings of EMNLP). Raw mean embeddings of e5 are
  all alike (cosine 0.93 to 0.99 between any two pages of the local site, right pair or not);
  centred, right pairs score 0.45 and above and wrong best matches 0.16 at most, so a threshold means
  something. A language with fewer than ``MIN_CENTRED_DOCUMENTS`` documents is not centred (its
  mean would be the documents themselves).

Candidates are the ``top_k`` most similar documents of side b for each document of side a, per site,
from one (sparse) matrix product per block of rows (:func:`bitextflow.align.candidates.top_k_similar`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from bitextflow.align.candidates import by_site, top_k_similar
from bitextflow.align.dictionary import BilingualDictionary
from bitextflow.align.embedding import Encoder
from bitextflow.align.lexical import WordTranslations, matches_itself, word_translations, words
from bitextflow.records import Document, DocumentPair
from bitextflow.text.languages import normalise_language

TFIDF_METHOD = "tfidf"
EMBEDDINGS_METHOD = "embeddings"
#: Paragraphs (title first) embedded per document, and characters per paragraph: enough to tell
#: documents apart, and a bound on encoder time for long pages.
EMBEDDED_PARAGRAPHS = 24
EMBEDDED_CHARS = 400
MIN_CENTRED_DOCUMENTS = 10


def _translated_words(text: str, translations: WordTranslations) -> list[str]:
    tokens: list[str] = []
    for word in words(text, language=translations.languages[1]):
        tokens += translations.backward.get(word, ())
        if matches_itself(word):
            tokens.append(word)
    return tokens


def _identity(tokens: list[str]) -> list[str]:
    return tokens


def tfidf_pairs(
    docs_a: Sequence[Document],
    docs_b: Sequence[Document],
    dictionary: BilingualDictionary | None,
    min_score: float,
    top_k: int,
) -> list[DocumentPair]:
    """Candidate pairs by TF-IDF cosine after translating side b into side a's language word for word.

    ``dictionary`` may be given in either direction; None pairs by words that match themselves only.
    """
    if dictionary is not None and docs_a and normalise_language(dictionary.lang_a) != normalise_language(docs_a[0].language):
        dictionary = dictionary.reversed()
    translations = word_translations(dictionary)
    pairs: list[DocumentPair] = []
    for _site, site_a, site_b in by_site(docs_a, docs_b):
        tokens_a = [words(_joined(doc), language=translations.languages[0]) for doc in site_a]
        tokens_b = [_translated_words(_joined(doc), translations) for doc in site_b]
        if not any(tokens_a) or not any(tokens_b):
            continue
        vectoriser = TfidfVectorizer(analyzer=_identity, sublinear_tf=True).fit(tokens_a + tokens_b)
        vectors_a, vectors_b = vectoriser.transform(tokens_a), vectoriser.transform(tokens_b)
        pairs += _pairs(site_a, site_b, top_k_similar(vectors_a, vectors_b, top_k, min_score), TFIDF_METHOD)
    return pairs


def _joined(document: Document) -> str:
    return "\n".join(text for _type, text in document.content_paragraphs)


def document_embeddings(documents: Sequence[Document], encoder: Encoder) -> np.ndarray:
    """One L2-normalised vector per document (zeros for a document with no text); each distinct
    paragraph text is encoded once."""
    texts = [
        [text[:EMBEDDED_CHARS] for _type, text in doc.content_paragraphs[:EMBEDDED_PARAGRAPHS] if text.strip()]
        for doc in documents
    ]
    distinct = sorted({text for group in texts for text in group})
    row = {text: i for i, text in enumerate(distinct)}
    encoded = np.asarray(encoder.encode(distinct), dtype=np.float64) if distinct else np.zeros((0, 1))
    vectors = np.zeros((len(documents), encoded.shape[1]), dtype=np.float64)
    for i, group in enumerate(texts):
        if group:
            mean = encoded[[row[text] for text in group]].mean(axis=0)
            vectors[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return vectors


def embedding_pairs(
    docs_a: Sequence[Document], docs_b: Sequence[Document], encoder: Encoder, min_score: float, top_k: int
) -> list[DocumentPair]:
    """Candidate pairs by cosine of mean paragraph embeddings (all documents encoded in one call)."""
    sites = list(by_site(docs_a, docs_b))
    side_a = [doc for _site, site_a, _site_b in sites for doc in site_a]
    side_b = [doc for _site, _site_a, site_b in sites for doc in site_b]
    embedded = document_embeddings(side_a + side_b, encoder)
    vectors = {
        doc.doc_id: vector
        for side, rows in ((side_a, embedded[: len(side_a)]), (side_b, embedded[len(side_a) :]))
        for doc, vector in zip(side, _centred(rows), strict=True)
    }
    pairs: list[DocumentPair] = []
    for _site, site_a, site_b in sites:
        vectors_a = np.array([vectors[doc.doc_id] for doc in site_a])
        vectors_b = np.array([vectors[doc.doc_id] for doc in site_b])
        pairs += _pairs(site_a, site_b, top_k_similar(vectors_a, vectors_b, top_k, min_score), EMBEDDINGS_METHOD)
    return pairs


def _centred(vectors: np.ndarray) -> np.ndarray:
    """Vectors of one language minus their mean (documents with text only), L2-normalised again."""
    has_text = np.linalg.norm(vectors, axis=1) > 0
    if has_text.sum() < MIN_CENTRED_DOCUMENTS:
        return vectors
    centred = np.where(has_text[:, None], vectors - vectors[has_text].mean(axis=0), 0.0)
    return centred / np.maximum(np.linalg.norm(centred, axis=1, keepdims=True), 1e-12)


def _pairs(site_a: Sequence[Document], site_b: Sequence[Document], scored, method: str) -> list[DocumentPair]:
    return [
        DocumentPair(site_a[i].doc_id, site_b[j].doc_id, site_a[i].url, site_b[j].url, method, score)
        for i, j, score in scored
        if site_a[i].content_paragraphs and site_b[j].content_paragraphs
    ]
