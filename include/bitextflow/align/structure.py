"""Document pairs from shared images and from page structure, after ILSP-FC's pair detector.

Papavassiliou, Prokopidis and Thurmair (2013), "A modular open-source focused crawler for mining
monolingual and bilingual corpora from the web", 6th Workshop on Building and Using Comparable
Corpora (BUCC), ACL. ILSP-FC pairs the pages of a site in two ways, both used here:

- **Images**: the versions of a page show the same pictures, while logos and navigation icons are
  on every page. An image is "critical" when it is rare: a kernel density estimate of image
  frequencies is cut at its first minimum (the valley between page-specific images and site
  furniture), and images in more than 10% of the pages are dropped whatever the estimate says.
  Pages are paired by the Jaccard index of their critical image sets, when their paragraph counts
  and text lengths are in proportion.
- **Structure**: a page's fingerprint is the sequence of its paragraph types (title, heading,
  list item, text ...) each with a coarse length class. Pairs are compared by text-length ratio,
  paragraph-count ratio and the normalised edit distance of their fingerprints, and scored by a
  classifier trained on pairs the platform is sure of: the URL-token pairs of the same run (ILSP-FC
  trains an SVM on annotated pairs; a logistic regression here, for a probability). With too few
  sure pairs a fixed rule scores them instead: one minus the edit distance.

Both keep ILSP-FC's constraint that the two pages' depths (URL path segments here) differ by at most
one. Candidates come per site and, for structure, from the nearest pages by text length: never all pairs.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein
from scipy.stats import gaussian_kde
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bitextflow.align.candidates import by_site, text_length
from bitextflow.records import Document, DocumentPair
from bitextflow.text.urls import url_depth

IMAGES_METHOD = "images"
STRUCTURE_METHOD = "structure"
#: ILSP-FC: images in more than this share of a site's pages are furniture, not content.
MAX_IMAGE_SHARE = 0.1
#: Largest text-length and paragraph-count ratio (longer / shorter) of a candidate pair.
MAX_RATIO = 2.0
MAX_DEPTH_DIFFERENCE = 1
#: Fingerprints are cut to this many paragraphs: the edit distance is quadratic in their length.
MAX_FINGERPRINT = 2000
#: Pages of the other side whose text length is nearest, examined per page for structure candidates.
STRUCTURE_WINDOW_FACTOR = 4
#: Sure pairs (and as many negatives) needed to train the structure classifier; fewer: the fixed rule.
MIN_TRAINING_PAIRS = 10
_TYPE_MARKS = {"title": "T", "heading": "H", "listitem": "L", "text": "P", "cell": "C", "quote": "Q", "code": "K"}


def critical_images(pages: Sequence[Document], max_share: float = MAX_IMAGE_SHARE) -> frozenset[str]:
    """Image names of a site that identify a page rather than the site.

    The share limit never goes below the number of languages of the site: an image shown on one page
    in every language is the most specific an image can be, however small the site.
    """
    frequency = Counter(name for page in pages for name in set(page.images))
    if not frequency:
        return frozenset()
    limit = max(max_share * len(pages), len({page.language for page in pages}))
    threshold = _density_valley(np.array(list(frequency.values()), dtype=np.float64))
    return frozenset(name for name, count in frequency.items() if count <= limit and count <= threshold)


def _density_valley(counts: np.ndarray) -> float:
    """The first local minimum of a Gaussian KDE of log image frequencies (infinity when unimodal)."""
    values = np.log(counts)
    if np.ptp(values) == 0:
        return math.inf
    grid = np.linspace(values.min(), values.max(), 256)
    density = gaussian_kde(values)(grid)
    for i in range(1, len(grid) - 1):
        if density[i] < density[i - 1] and density[i] <= density[i + 1]:
            return float(math.exp(grid[i]))
    return math.inf


def _in_proportion(doc_a: Document, doc_b: Document) -> bool:
    return (
        abs(url_depth(doc_a.url) - url_depth(doc_b.url)) <= MAX_DEPTH_DIFFERENCE
        and _ratio(len(doc_a.content_paragraphs), len(doc_b.content_paragraphs)) <= MAX_RATIO
        and _ratio(text_length(doc_a), text_length(doc_b)) <= MAX_RATIO
    )


def _ratio(x: float, y: float) -> float:
    return max(x, y) / min(x, y) if min(x, y) > 0 else math.inf


def image_pairs(docs_a: Sequence[Document], docs_b: Sequence[Document], min_score: float) -> list[DocumentPair]:
    """Pairs sharing critical images, scored by the Jaccard index of their critical image sets.

    A pair is proposed only when it is the single best of both its pages: a page whose images fit
    several pages of the other side equally well (a rare icon on a few pages) says nothing about which.
    """
    pairs: list[DocumentPair] = []
    for _site, site_a, site_b in by_site(docs_a, docs_b):
        critical = critical_images(site_a + site_b)
        if not critical:
            continue
        images_b = [frozenset(doc.images) & critical for doc in site_b]
        index: defaultdict[str, list[int]] = defaultdict(list)
        for j, images in enumerate(images_b):
            for name in images:
                index[name].append(j)
        scored: list[tuple[float, int, int]] = []
        for i, doc_a in enumerate(site_a):
            images_a = frozenset(doc_a.images) & critical
            for j in {j for name in images_a for j in index.get(name, ())}:
                jaccard = len(images_a & images_b[j]) / len(images_a | images_b[j])
                if jaccard >= min_score and _in_proportion(doc_a, site_b[j]):
                    scored.append((jaccard, i, j))
        pairs += [
            DocumentPair(site_a[i].doc_id, site_b[j].doc_id, site_a[i].url, site_b[j].url, IMAGES_METHOD, jaccard)
            for jaccard, i, j in _single_best(scored)
        ]
    return pairs


def _single_best(scored: Sequence[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """The ``(score, i, j)`` that are the unique highest score of both row ``i`` and column ``j``."""
    best_i: defaultdict[int, list[float]] = defaultdict(list)
    best_j: defaultdict[int, list[float]] = defaultdict(list)
    for score, i, j in scored:
        best_i[i].append(score)
        best_j[j].append(score)
    return [
        (score, i, j)
        for score, i, j in scored
        if score == max(best_i[i]) == max(best_j[j]) and best_i[i].count(score) == 1 and best_j[j].count(score) == 1
    ]


def fingerprint(document: Document) -> list[str]:
    """Paragraph type marks with a length class each (characters, powers of 4): ``["T2", "H1", "P4", ...]``."""
    return [
        _TYPE_MARKS.get(kind, "P") + str(min(int(math.log(len(text) + 1, 4)), 6))
        for kind, text in document.content_paragraphs[:MAX_FINGERPRINT]
    ]


def structure_features(doc_a: Document, doc_b: Document, prints: dict[str, list[str]]) -> list[float]:
    """Log text-length ratio, log paragraph-count ratio, normalised fingerprint edit distance, depth difference
    (``prints``: the :func:`fingerprint` of each document by id, computed once)."""
    print_a, print_b = prints[doc_a.doc_id], prints[doc_b.doc_id]
    return [
        abs(math.log((text_length(doc_a) + 1) / (text_length(doc_b) + 1))),
        abs(math.log((len(doc_a.content_paragraphs) + 1) / (len(doc_b.content_paragraphs) + 1))),
        Levenshtein.normalized_distance(print_a, print_b),
        float(abs(url_depth(doc_a.url) - url_depth(doc_b.url))),
    ]


def _structure_candidates(docs_a: Sequence[Document], docs_b: Sequence[Document], top_k: int) -> list[tuple[Document, Document]]:
    """Per site, each page of side a against the ``STRUCTURE_WINDOW_FACTOR * top_k`` pages of side b
    nearest in log text length, kept when in proportion: O(n log n + n k) per site."""
    candidates: list[tuple[Document, Document]] = []
    window = STRUCTURE_WINDOW_FACTOR * top_k
    for _site, site_a, site_b in by_site(docs_a, docs_b):
        site_b = sorted((doc for doc in site_b if doc.content_paragraphs), key=text_length)
        lengths = [math.log(text_length(doc) + 1) for doc in site_b]
        for doc_a in site_a:
            if not doc_a.content_paragraphs:
                continue
            length = math.log(text_length(doc_a) + 1)
            position = bisect.bisect_left(lengths, length)
            nearest = sorted(
                range(max(0, position - window), min(len(site_b), position + window)), key=lambda j: abs(lengths[j] - length)
            )[:window]
            candidates += [(doc_a, site_b[j]) for j in nearest if _in_proportion(doc_a, site_b[j])]
    return candidates


def structure_pairs(
    docs_a: Sequence[Document], docs_b: Sequence[Document], sure_pairs: Sequence[DocumentPair], min_score: float, top_k: int
) -> tuple[list[DocumentPair], str]:
    """Candidate pairs scored by the structure classifier; also says which scorer ran (``classifier``/``rule``)."""
    candidates = _structure_candidates(docs_a, docs_b, top_k)
    documents = {doc.doc_id: doc for doc in (*docs_a, *docs_b)}
    prints = {doc_id: fingerprint(doc) for doc_id, doc in documents.items()}
    features = np.array([structure_features(a, b, prints) for a, b in candidates], dtype=np.float64).reshape(-1, 4)
    model = _train(candidates, features, sure_pairs, documents, prints)
    scores = model.predict_proba(features)[:, 1] if model is not None and len(candidates) else 1.0 - features[:, 2]
    best: defaultdict[str, list[tuple[float, Document, Document]]] = defaultdict(list)
    for (doc_a, doc_b), score in zip(candidates, scores, strict=True):
        if score >= min_score:
            best[doc_a.doc_id].append((float(score), doc_a, doc_b))
    pairs = [
        DocumentPair(doc_a.doc_id, doc_b.doc_id, doc_a.url, doc_b.url, STRUCTURE_METHOD, score)
        for scored in best.values()
        for score, doc_a, doc_b in sorted(scored, key=lambda item: (-item[0], item[2].url))[:top_k]
    ]
    return pairs, "classifier" if model is not None else "rule"


def _train(
    candidates: Sequence[tuple[Document, Document]],
    features: np.ndarray,
    sure_pairs: Sequence[DocumentPair],
    documents: dict[str, Document],
    prints: dict[str, list[str]],
):
    """Logistic regression on sure pairs (positives) against the candidates that contradict them
    (a sure page with another partner), or None when either class has fewer than ``MIN_TRAINING_PAIRS``."""
    partner_of_a = {p.doc_id_a: p.doc_id_b for p in sure_pairs if p.doc_id_a in documents and p.doc_id_b in documents}
    partner_of_b = {b: a for a, b in partner_of_a.items()}
    negatives = [
        i
        for i, (doc_a, doc_b) in enumerate(candidates)
        if (doc_a.doc_id in partner_of_a or doc_b.doc_id in partner_of_b) and partner_of_a.get(doc_a.doc_id) != doc_b.doc_id
    ]
    if len(partner_of_a) < MIN_TRAINING_PAIRS or len(negatives) < MIN_TRAINING_PAIRS:
        return None
    positives = [structure_features(documents[a], documents[b], prints) for a, b in partner_of_a.items()]
    x = np.vstack([np.array(positives), features[negatives]])
    y = np.array([1] * len(positives) + [0] * len(negatives))
    return make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced")).fit(x, y)
