"""Document alignment beyond URLs: images, structure, TF-IDF, embeddings, and their 1-1 combination.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_document_alignment.py's.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from bitextflow.align.combined import DOCUMENT_METHODS, MIN_TRANSLATED_SHARE, align_documents, competitive_linking, language_share
from bitextflow.align.content import embedding_pairs, tfidf_pairs
from bitextflow.align.dictionary import BilingualDictionary
from bitextflow.align.documents import align_by_url
from bitextflow.align.structure import critical_images, image_pairs, structure_pairs
from bitextflow.extract.structure import page
from bitextflow.records import Document, DocumentPair
from tests.support import cpu_clock


class Site:
    """A synthetic bilingual site: ``n`` English pages and their Spanish translations, word for word
    through an invented vocabulary (so the dictionary is exact), with the same paragraph structure,
    one photo per page pair and site furniture (logo, navigation icons) on every page."""

    def __init__(self, n: int, seed: int = 0, hidden: Sequence[int] = (), host: str = "site.test") -> None:
        rng = random.Random(seed)
        spelled: set[str] = set()
        while len(spelled) < 2 * 3000:
            spelled.add("".join(rng.choice(string.ascii_lowercase) for _ in range(5)))
        vocabulary = sorted(spelled)
        rng.shuffle(vocabulary)
        self.english, self.spanish = vocabulary[:3000], vocabulary[3000:]
        self.concept = {word: k for k, word in enumerate(self.english)} | {word: k for k, word in enumerate(self.spanish)}
        self.dictionary = BilingualDictionary("en", "es", tuple(zip(self.english, self.spanish, strict=True)), {})
        self.docs_a: list[Document] = []
        self.docs_b: list[Document] = []
        self.truth: set[tuple[str, str]] = set()
        furniture = ("logo.png", "next.png", "prev.png")
        for i in range(n):
            paragraphs = []
            for _ in range(rng.randint(3, 12)):
                kind = rng.choice(("heading", "text", "text", "listitem"))
                paragraphs.append((kind, [rng.randrange(3000) for _ in range(rng.randint(2, 40))]))
            images = (*furniture, f"photo{i}.jpg")
            url_a = f"http://{host}/en/page{i}.html"
            name_b = hashlib.sha1(f"{seed}-{i}".encode()).hexdigest()[:10] if i in hidden else f"page{i}"
            url_b = f"http://{host}/es/{name_b}.html"
            self.docs_a.append(self._document(url_a, "en", paragraphs, self.english, images))
            self.docs_b.append(self._document(url_b, "es", paragraphs, self.spanish, images))
            self.truth.add((url_a, url_b))
        rng.shuffle(self.docs_b)

    @staticmethod
    def _document(url: str, language: str, paragraphs, words: list[str], images: tuple[str, ...]) -> Document:
        doc_id = hashlib.sha1(url.encode()).hexdigest()[:16]
        text = tuple((kind, " ".join(words[k] for k in concepts)) for kind, concepts in paragraphs)
        return Document.of_text(doc_id, url, language, (("title", text[0][1][:30]), *text), images)

    @property
    def documents(self) -> list[Document]:
        return self.docs_a + self.docs_b


class ConceptEncoder:
    """Stands for the multilingual encoder (its real model is exercised by tests/unit/test_encoder.py and the
    Vecalign tests): maps each invented word to its concept, so translations embed alike."""

    dim = 64

    def __init__(self, site: Site) -> None:
        self.site = site
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.split():
                vectors[row, self.site.concept.get(word, 0) % self.dim] += 1.0
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


def _correct(pairs: Sequence[DocumentPair], truth: set[tuple[str, str]]) -> int:
    return sum((p.url_a, p.url_b) in truth for p in pairs)


def test_tfidf_with_a_dictionary_pairs_documents_whose_urls_give_no_hint() -> None:
    site = Site(20, seed=1, hidden=range(20))
    assert align_by_url(site.documents, "en", "es")[0] == []
    pairs = tfidf_pairs(site.docs_a, site.docs_b, site.dictionary, min_score=0.2, top_k=5)
    best = competitive_linking([pairs])
    assert len(best) == 20 and _correct(best, site.truth) == 20
    assert {p.method for p in best} == {"tfidf"}
    # The dictionary in the other direction is turned round, not misread.
    assert competitive_linking([tfidf_pairs(site.docs_a, site.docs_b, site.dictionary.reversed(), 0.2, 5)]) == best
    # Without a dictionary, invented words share nothing: no pair rather than a wrong one.
    assert tfidf_pairs(site.docs_a, site.docs_b, None, min_score=0.2, top_k=5) == []


def test_embeddings_pair_documents_by_mean_paragraph_vectors() -> None:
    site = Site(20, seed=2, hidden=range(20))
    encoder = ConceptEncoder(site)
    pairs = competitive_linking([embedding_pairs(site.docs_a, site.docs_b, encoder, min_score=0.5, top_k=3)])
    assert encoder.calls == 1  # every document of the run in one encoder call
    assert len(pairs) == 20 and _correct(pairs, site.truth) == 20


def test_critical_images_drop_site_furniture_and_pair_pages() -> None:
    site = Site(30, seed=3, hidden=range(30))
    critical = critical_images(site.documents)
    assert critical == {f"photo{i}.jpg" for i in range(30)}
    pairs = image_pairs(site.docs_a, site.docs_b, min_score=0.5)
    assert len(pairs) == 30 and _correct(pairs, site.truth) == 30
    assert all(p.method == "images" and p.score == 1.0 for p in pairs)


def test_structure_classifier_trains_on_url_pairs_and_finds_the_hidden_ones() -> None:
    site = Site(40, seed=4, hidden=range(30, 40))
    url_pairs, _ = align_by_url(site.documents, "en", "es")
    assert len(url_pairs) == 30
    pairs, scorer = structure_pairs(site.docs_a, site.docs_b, url_pairs, min_score=0.5, top_k=5)
    assert scorer == "classifier"
    hidden_truth = {pair for pair in site.truth if "page" not in pair[1]}
    combined, report = align_documents(site.documents, "en", "es", ["url_tokens", "structure"])
    assert report.structure_scorer == "classifier" and report.kept["url_tokens"] == 30
    found_hidden = [p for p in combined if p.method == "structure"]
    assert _correct(found_hidden, hidden_truth) >= 9 and _correct(combined, site.truth) >= 39


def test_structure_falls_back_to_a_fixed_rule_without_enough_sure_pairs() -> None:
    site = Site(12, seed=5, hidden=range(3, 12))
    url_pairs, _ = align_by_url(site.documents, "en", "es")
    pairs, scorer = structure_pairs(site.docs_a, site.docs_b, url_pairs, min_score=0.5, top_k=5)
    assert scorer == "rule"
    assert _correct(competitive_linking([pairs]), site.truth) >= 11


def test_competitive_linking_is_one_to_one_by_method_then_score() -> None:
    def pair(a: str, b: str, method: str, score: float) -> DocumentPair:
        return DocumentPair(a, b, f"u/{a}", f"u/{b}", method, score)

    first = [pair("a1", "b1", "url_tokens", 1.0)]
    second = [
        pair("a1", "b2", "tfidf", 0.9),
        pair("a2", "b2", "tfidf", 0.8),
        pair("a2", "b1", "tfidf", 0.95),
        pair("a3", "b3", "tfidf", 0.1),
    ]
    assert competitive_linking([first, second]) == [
        pair("a1", "b1", "url_tokens", 1.0),
        pair("a2", "b2", "tfidf", 0.8),
        pair("a3", "b3", "tfidf", 0.1),
    ]


def test_combined_keeps_url_behaviour_and_adds_content_pairs() -> None:
    site = Site(30, seed=6, hidden=range(20, 30))
    url_only, report = align_documents(site.documents, "en", "es")
    expected_pairs, expected_counts = align_by_url(site.documents, "en", "es")
    assert url_only == expected_pairs and report.unmatched == expected_counts
    pairs, report = align_documents(
        site.documents, "en", "es", list(DOCUMENT_METHODS), dictionary=site.dictionary, encoder=ConceptEncoder(site)
    )
    assert len(pairs) == 30 and _correct(pairs, site.truth) == 30
    assert report.kept["url_tokens"] == 20 and report.kept["tfidf"] == 10
    assert set(report.candidates) == set(DOCUMENT_METHODS)


def test_empty_documents_one_sided_sites_and_other_languages_are_counted() -> None:
    site = Site(3, seed=7, hidden=range(3))
    extra = [
        Document.of_text("empty", "http://site.test/en/empty.html", "en"),
        Document.of_text("lonely", "http://other.test/en/only.html", "en", (("text", "only english here"),)),
        Document.of_text("french", "http://site.test/fr/page0.html", "fr", (("text", "bonjour"),)),
    ]
    documents = site.documents + extra
    pairs, report = align_documents(documents, "en", "es", ["tfidf", "structure"], dictionary=site.dictionary)
    assert _correct(pairs, site.truth) == 3
    assert report.unmatched == {"empty_document": 1, "no_counterpart_a": 1, "other_language": 1}
    assert 2 * len(pairs) + sum(report.unmatched.values()) == len(documents)
    nothing, report = align_documents([], "en", "es", list(DOCUMENT_METHODS), encoder=ConceptEncoder(site))
    assert nothing == [] and not report.unmatched and not any(report.candidates.values())
    with pytest.raises(ValueError, match="document methods"):
        align_documents(documents, "en", "es", ["fuzzy"])
    with pytest.raises(ValueError, match="encoder"):
        align_documents(documents, "en", "es", ["embeddings"])


def test_a_site_of_two_thousand_documents_aligns_without_all_pairs() -> None:
    site = Site(1000, seed=8, hidden=range(0, 1000, 2))
    with cpu_clock() as seconds:
        pairs, report = align_documents(
            site.documents, "en", "es", list(DOCUMENT_METHODS), top_k=5, dictionary=site.dictionary, encoder=ConceptEncoder(site)
        )
    assert seconds() < 60, f"2,000 documents took {seconds():.1f} s of CPU"
    assert all(count <= 5 * 1000 for count in report.candidates.values())  # top-k per document, not 1,000,000 pairs
    assert _correct(pairs, site.truth) >= 990


def test_extraction_records_image_file_names_in_page_order() -> None:
    html = (
        "<html><head><title>T</title></head><body><img src='/static/logo.png'>"
        "<article><h1>Heading</h1><p>" + "Some long paragraph of text about the page content. " * 5 + "</p>"
        "<img src='photos/cat.jpg?size=2#x'><img alt='no source'></article></body></html>"
    )
    result = page(html, "http://site.test/en/a.html")
    assert result is not None and result.images == ["logo.png", "cat.jpg"]


def _translations(site: Site) -> dict[str, Document]:
    """Each English page's Spanish translation, by the English page's URL."""
    by_url = {doc.url: doc for doc in site.docs_b}
    return {url_a: by_url[url_b] for url_a, url_b in site.truth}


def _partly_translated(english: Document, spanish: Document, translated: int) -> Document:
    """``spanish`` as an unfinished translation, at its own URL: its title and first ``translated`` paragraphs
    translated, the rest ``english``'s text, and identified as English, as a page mostly in English is."""
    paragraphs = (*spanish.paragraphs[: 1 + translated], *english.paragraphs[1 + translated :])
    return replace(spanish, language="en", paragraphs=paragraphs)


def _with_page(documents: Sequence[Document], page: Document) -> list[Document]:
    """``documents`` with ``page`` in place of the document at its URL."""
    return [page if doc.url == page.url else doc for doc in documents]


def test_a_partly_translated_page_identified_as_the_source_language_is_paired() -> None:
    """The page pair used to be lost: both pages English, the translation a duplicate URL key of the original."""
    site = Site(12, seed=9)
    english = site.docs_a[3]
    spanish = _translations(site)[english.url]
    half = (len(spanish.paragraphs) - 1) // 2
    partly = _partly_translated(english, spanish, half)
    assert language_share(partly, "es") >= MIN_TRANSLATED_SHARE > language_share(english, "es") == 0.0
    documents = _with_page(site.documents, partly)
    methods = list(DOCUMENT_METHODS[:2])  # url_tokens, tfidf

    before, before_report = align_documents(site.documents, "en", "es", methods, dictionary=site.dictionary)
    pairs, report = align_documents(documents, "en", "es", methods, dictionary=site.dictionary)
    assert (english.url, partly.url) in {(p.url_a, p.url_b) for p in pairs}
    assert report.partly_translated == 1 and not report.unmatched
    # the other pairs are those of the site with the page fully translated
    assert [p for p in pairs if p.url_a != english.url] == [p for p in before if p.url_a != english.url]
    assert _correct(pairs, site.truth) == 12 and before_report.partly_translated == 0

    # without the second pass the translation was a duplicate key, the original without counterpart
    url_only, url_report = align_by_url(documents, "en", "es")
    assert len(url_only) == 11 and url_report == {"duplicate_key": 1, "no_counterpart_a": 1}


def test_an_original_holding_some_of_the_translations_language_stays_the_original() -> None:
    """The Installation Guide's short English page whose language switcher ("English Tiếng Việt") was identified as
    Vietnamese: taken as a partly translated page too, it was paired with another English page by its switcher, and its
    own unfinished translation went unpaired. Of two such pages at one URL key, the one holding more is the translation."""
    site = Site(12, seed=9)
    english = site.docs_a[3]
    spanish = _translations(site)[english.url]
    partly = _partly_translated(english, spanish, (len(spanish.paragraphs) - 1) // 2)
    switcher = replace(english.paragraphs[1], text="Lea esta página en español · Versión en español · Español", language="es")
    english_with_switcher = replace(english, paragraphs=(*english.paragraphs, switcher))
    assert MIN_TRANSLATED_SHARE <= language_share(english_with_switcher, "es") < language_share(partly, "es")
    documents = _with_page(_with_page(site.documents, partly), english_with_switcher)
    pairs, report = align_documents(documents, "en", "es", list(DOCUMENT_METHODS[:2]), dictionary=site.dictionary)
    assert (english.url, partly.url) in {(p.url_a, p.url_b) for p in pairs}
    assert report.partly_translated == 1 and _correct(pairs, site.truth) == len(pairs) == 12


def test_a_page_in_another_script_of_the_second_language_is_no_translation_of_the_pair() -> None:
    """The Reference's partly translated chapter in Traditional Chinese (``ch11.zh-tw.html``, identified English, at
    the URL key of its original): an en-zh run paired it as the English page's translation, its Traditional paragraphs
    counted as Chinese, and the Simplified translation went unpaired."""
    site = Site(12, seed=9)

    def in_chinese(doc: Document, code: str = "zh") -> Document:
        paragraphs = tuple(replace(p, language=code) if p.language == "es" else p for p in doc.paragraphs)
        return replace(doc, language=code if doc.language == "es" else doc.language, paragraphs=paragraphs)

    english = site.docs_a[3]
    spanish = _translations(site)[english.url]
    traditional = in_chinese(_partly_translated(english, spanish, (len(spanish.paragraphs) - 1) // 2), "zh_Hant")
    assert language_share(traditional, "zh") == 0.0 < MIN_TRANSLATED_SHARE <= language_share(traditional, "zh_Hant")
    documents = _with_page([in_chinese(doc) for doc in site.documents], traditional)
    methods = list(DOCUMENT_METHODS[:2])
    pairs, report = align_documents(documents, "en", "zh", methods, dictionary=site.dictionary)
    assert english.url not in {p.url_a for p in pairs} and report.partly_translated == 0
    pairs, report = align_documents(documents, "en", "zh_Hant", methods, dictionary=site.dictionary)
    assert {(p.url_a, p.url_b) for p in pairs} == {(english.url, traditional.url)} and report.partly_translated == 1


def test_a_translation_in_a_denser_script_is_measured_by_what_its_text_says() -> None:
    """A Japanese chapter of package tables: its Japanese is under a twentieth of its characters, over a twentieth of
    its text."""
    english = Site(2, seed=9).docs_a[0]
    title, paragraph = english.paragraphs[0], english.paragraphs[1]
    japanese = replace(paragraph, text="パッケージ管理システム", language="ja")  # 11 characters, 22.5 Latin equivalents
    tables = replace(paragraph, text="x" * 300, language="en")
    page = replace(english, paragraphs=(title, japanese, tables))
    assert 11 / 311 < MIN_TRANSLATED_SHARE <= language_share(page, "ja")


def test_a_partly_translated_page_behind_an_opaque_url_is_paired_by_its_translated_paragraphs() -> None:
    site = Site(12, seed=10, hidden=[5])
    english = site.docs_a[5]
    spanish = _translations(site)[english.url]
    partly = _partly_translated(english, spanish, (len(spanish.paragraphs) - 1) // 2)
    pairs, report = align_documents(
        _with_page(site.documents, partly), "en", "es", list(DOCUMENT_METHODS[:2]), dictionary=site.dictionary
    )
    found = {(p.url_a, p.url_b): p.method for p in pairs}
    assert found[english.url, partly.url] == "tfidf" and report.partly_translated == 1
    assert _correct(pairs, site.truth) == len(pairs) == 12


def test_pages_with_too_little_translated_or_no_original_stay_unpaired_and_counted() -> None:
    site = Site(12, seed=11)
    translations = _translations(site)
    first, second = site.docs_a[1], site.docs_a[2]
    # a page with a word translated is under the share: an English page, a duplicate key of its original as before
    barely = _partly_translated(first, translations[first.url], 0)
    barely = replace(barely, paragraphs=(*barely.paragraphs, replace(translations[first.url].paragraphs[1], text="sí")))
    assert language_share(barely, "es") < MIN_TRANSLATED_SHARE
    # a partly translated page whose original is not on the site pairs with nothing else
    orphan = _partly_translated(second, translations[second.url], (len(translations[second.url].paragraphs) - 1) // 2)
    documents = [doc for doc in _with_page(_with_page(site.documents, barely), orphan) if doc.url != second.url]
    pairs, report = align_documents(
        documents, "en", "es", list(DOCUMENT_METHODS), dictionary=site.dictionary, encoder=ConceptEncoder(site)
    )
    assert _correct(pairs, site.truth) == len(pairs) == 10
    assert report.partly_translated == 0
    assert report.unmatched == {"duplicate_key": 1, "no_counterpart_a": 1, "no_counterpart_partly_translated": 1}
    assert 2 * len(pairs) + sum(report.unmatched.values()) == len(documents)
