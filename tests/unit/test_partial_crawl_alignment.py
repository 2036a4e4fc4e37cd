"""Document alignment of a partial crawl: content methods do not overrule what the site names (its URL pattern with
the URLs the crawl left unfetched, its declared versions), and content pairs need a margin over the runner-up."""

from __future__ import annotations

from bitextflow.align.combined import align_documents
from bitextflow.align.site_naming import with_margin
from bitextflow.records import Document, DocumentPair

TEMPLATE = "Debian installation manual chapter describing partitions kernels packages network configuration"


def _page(url: str, language: str, topic: str) -> Document:
    """A page of a templated site: the template's words and a few of its own (cognates match themselves)."""
    return Document.of_text(url, url, language, (("title", f"Manual {topic}"), ("text", f"{TEMPLATE} {topic} {topic}")))


def _site(crawled_pairs: int, lone_en: str, lone_es: str) -> list[Document]:
    """``crawled_pairs`` page pairs under /en/ and /es/, plus one English and one Spanish page whose counterparts the
    crawl did not fetch; the two lone pages are look-alikes of the same template."""
    topics = ["bootloader", "filesystem", "printing", "firewall", "keyboard", "locales"][:crawled_pairs]
    documents = [_page(f"http://h/{lang}/{topic}.html", lang, topic) for topic in topics for lang in ("en", "es")]
    return [
        *documents,
        _page(f"http://h/en/{lone_en}.html", "en", "mirrors"),
        _page(f"http://h/es/{lone_es}.html", "es", "mirrors"),
    ]


def test_a_page_whose_counterpart_the_site_names_and_the_crawl_left_is_not_paired_by_content():
    documents = _site(4, "upgrading", "seguridad")
    unfetched = {"http://h/es/upgrading.html", "http://h/en/seguridad.html", "http://h/en/unrelated.html"}
    blind, _ = align_documents(documents, "en", "es", ["url_tokens", "tfidf"], margins={"tfidf": 0.0})
    assert ("http://h/en/upgrading.html", "http://h/es/seguridad.html") in {(p.url_a, p.url_b) for p in blind}
    pairs, report = align_documents(documents, "en", "es", ["url_tokens", "tfidf"], unfetched=unfetched)
    assert {p.method for p in pairs} == {"url_tokens"} and len(pairs) == 4
    assert report.refused["counterpart_not_crawled"] >= 1 and report.unmatched["counterpart_not_crawled"] == 2


def test_a_translated_path_is_still_paired_by_content_on_a_site_crawled_to_its_end():
    documents = _site(4, "upgrading", "actualizacion")  # the same page under a translated path, nothing left unfetched
    pairs, _ = align_documents(documents, "en", "es", ["url_tokens", "tfidf"])
    found = {(p.url_a, p.url_b, p.method) for p in pairs}
    assert ("http://h/en/upgrading.html", "http://h/es/actualizacion.html", "tfidf") in found
    # on a partial crawl, two marked pages under different keys each have their counterpart named elsewhere
    pairs, report = align_documents(documents, "en", "es", ["url_tokens", "tfidf"], unfetched={"http://h/en/other.html"})
    assert {p.method for p in pairs} == {"url_tokens"} and report.refused["counterpart_not_crawled"] >= 1


def test_declared_versions_pair_pages_unless_content_contradicts_and_overrule_content():
    documents = _site(3, "upgrading", "actualizacion")
    declared = {"http://h/en/upgrading.html": {"es": "http://h/es/actualizacion.html"}}
    pairs, report = align_documents(documents, "en", "es", ["url_tokens", "tfidf"], declared=declared)
    assert ("http://h/en/upgrading.html", "http://h/es/actualizacion.html", "declared") in {
        (p.url_a, p.url_b, p.method) for p in pairs
    }
    assert report.kept["declared"] == 1 and not report.declared_disagreements
    # a declaration that content contradicts (the English page's clear match is another page) is counted, not linked
    wrong = {"http://h/en/printing.html": {"es": "http://h/es/actualizacion.html"}}
    documents = [d for d in documents if d.url != "http://h/es/printing.html"] + [
        _page("http://h/es/impresion.html", "es", "printing")
    ]
    pairs, report = align_documents(documents, "en", "es", ["url_tokens", "tfidf"], declared=wrong)
    assert report.declared_disagreements == 1 and "declared" not in report.kept
    # ... and a page declaring a counterpart elsewhere is not paired by content with another page
    elsewhere = {"http://h/en/upgrading.html": {"es": "http://h/es/not-crawled.html"}}
    pairs, report = align_documents(
        _site(3, "upgrading", "actualizacion"), "en", "es", ["url_tokens", "tfidf"], declared=elsewhere
    )
    assert report.refused["declared_counterpart_elsewhere"] >= 1
    assert "http://h/en/upgrading.html" not in {p.url_a for p in pairs}


def test_a_content_pair_needs_its_margin_over_the_runner_up_of_both_pages():
    def pair(a: str, b: str, score: float) -> DocumentPair:
        return DocumentPair(a, b, a, b, "tfidf", score)

    clear, close = pair("a1", "b1", 0.9), pair("a2", "b2", 0.50)
    candidates = [clear, pair("a1", "b2", 0.3), close, pair("a3", "b2", 0.48)]
    assert with_margin(candidates, 0.1) == [clear]  # b2's runner-up (0.48) is within 0.1 of its best
    assert with_margin(candidates, 0.0) == candidates
