"""Document alignment of a partial crawl, the rules chosen by leave-one-site-out cross-validation: a counterpart the
site names by a link the crawl left unfetched (even before any URL-token pair was crawled) overrules content, and
content pairs need the agreement of the text methods (mutual best of TF-IDF and structure alike)."""

from __future__ import annotations

from bitextflow.align.combined import align_documents
from bitextflow.align.site_naming import mutual_best
from bitextflow.records import Document, DocumentPair

METHODS = ["url_tokens", "tfidf", "structure"]


def _doc(url: str, language: str, paragraphs: list[tuple[str, str]]) -> Document:
    return Document.of_text(url, url, language, tuple(paragraphs))


KERNEL = _doc("http://h/en/kernel.html", "en", [
    ("title", "Kernel modules"), ("text", "kernel modules firmware drivers loading"),
    ("text", "the kernel loads firmware for drivers"), ("text", "short"),
])  # fmt: skip
#: The best TF-IDF match of KERNEL (the same words) laid out otherwise (eight paragraphs).
SAME_WORDS = _doc("http://h/x/aa.html", "es", [("title", "Kernel")] + [("text", f"kernel modules firmware drivers {'x' * i}") for i in range(1, 9)])  # fmt: skip
#: The best structure match of KERNEL (the same layout) about something else.
SAME_LAYOUT = _doc("http://h/x/bb.html", "es", [
    ("title", "Impresoras y colas"), ("text", "impresoras colas cups servidor configuracion"),
    ("text", "el servidor cups gestiona las colas"), ("text", "corto"),
])  # fmt: skip


def test_on_a_partial_crawl_content_pairs_need_every_text_method_to_agree():
    documents = [KERNEL, SAME_WORDS, SAME_LAYOUT]
    complete, _ = align_documents(documents, "en", "es", METHODS)
    assert [(p.url_b, p.method) for p in complete] == [("http://h/x/aa.html", "tfidf")]  # crawled to its end: as before
    partial, report = align_documents(documents, "en", "es", METHODS, unfetched={"http://h/en/other.html"})
    assert partial == [] and report.refused["content_methods_disagree"] == 2
    assert report.unmatched["content_methods_disagree"] == 3  # every page left unpaired says why
    off, _ = align_documents(documents, "en", "es", METHODS, unfetched={"http://h/en/other.html"}, partial_crawl_agreement=False)
    assert [p.url_b for p in off] == ["http://h/x/aa.html"]


def test_a_counterpart_named_by_an_unfetched_link_overrules_content_before_any_url_pair_is_crawled():
    """A budgeted crawl that reached the English pages and a Spanish-only page, but no translated pair: the English
    page's switcher named /es/kernel.html, which was left in the frontier."""
    lone = _doc("http://h/es/impresoras.html", "es", [
        ("title", "Kernel modules"), ("text", "kernel modules firmware drivers loading"),
        ("text", "kernel firmware drivers"), ("text", "corto"),
    ])  # fmt: skip
    blind, _ = align_documents([KERNEL, lone], "en", "es", METHODS)
    assert [p.url_b for p in blind] == ["http://h/es/impresoras.html"]
    pairs, report = align_documents([KERNEL, lone], "en", "es", METHODS, unfetched={"http://h/es/kernel.html"})
    assert pairs == [] and report.refused["counterpart_not_crawled"] >= 1
    # a third language's unfetched version names no counterpart in the pair
    pairs, _ = align_documents(
        [KERNEL, lone], "en", "es", METHODS, unfetched={"http://h/fr/kernel.html"}, partial_crawl_agreement=False
    )
    assert [p.url_b for p in pairs] == ["http://h/es/impresoras.html"]


def test_mutual_best_wants_each_page_s_single_best():
    def pair(a: str, b: str, score: float) -> DocumentPair:
        return DocumentPair(a, b, a, b, "tfidf", score)

    candidates = [
        pair("a1", "b1", 0.9),
        pair("a1", "b2", 0.5),
        pair("a2", "b2", 0.4),
        pair("a3", "b3", 0.6),
        pair("a3", "b4", 0.6),
    ]
    # b2's best is a1, whose best is b1: (a2, b2) is not mutual; a3 ties between b3 and b4: neither
    assert mutual_best(candidates) == {("a1", "b1")}
