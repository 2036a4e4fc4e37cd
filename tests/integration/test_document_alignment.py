"""Document alignment beyond URLs: images, structure, TF-IDF, embeddings, and their 1-1 combination.

The tests of this module against real services; those that need none are tests/unit/test_document_alignment.py's.
"""

from __future__ import annotations

from bitextflow.align.combined import MIN_TRANSLATED_SHARE, align_documents, language_share
from bitextflow.records import Document
from tests.support import ROOT


def test_align_documents_stage_records_method_and_score(store) -> None:
    """The stage on real S3 with the default methods: URL pairs, plus a pair only content can find."""
    import pandas as pd

    from bitextflow import records
    from bitextflow.config import load_pair_config
    from bitextflow.stages.registry import REGISTRY, run_context
    from bitextflow.storage.tables import read_table
    from tests.support import through_partitions

    root = ROOT
    config = load_pair_config(root / "include" / "pairs" / "en-es.yaml")
    assert config.align.document_methods[0] == "url_tokens"
    ctx = run_context(config, store, "align_documents_methods")
    texts = {
        "guide": (
            "Install Debian 12 bookworm with the netinst image on amd64.",
            "Instale Debian 12 bookworm con la imagen netinst en amd64.",
        ),
        "faq": (
            "The apt-get 2.6 tool fetches packages from mirrors.",
            "La herramienta apt-get 2.6 obtiene paquetes de las réplicas.",
        ),
        "kernel": (
            "Linux 6.1 kernel modules load through modprobe and udev.",
            "Los módulos del núcleo Linux 6.1 se cargan con modprobe y udev.",
        ),
    }
    urls = {
        ("guide", "en"): "http://site.test/en/guide.html", ("guide", "es"): "http://site.test/es/guide.html",
        ("faq", "en"): "http://site.test/en/faq.html", ("faq", "es"): "http://site.test/es/faq.html",
        ("kernel", "en"): "http://site.test/en/kernel.html", ("kernel", "es"): "http://site.test/es/x81f2a.html",
    }  # fmt: skip
    rows = []
    for (name, language), url in urls.items():
        text = texts[name][0 if language == "en" else 1]
        paragraphs = [
            {"type": "text", "text": text, "language": language, "boilerplate": False, "out_of_language": False, "terms": []}
        ]
        rows.append({"doc_id": f"{name}-{language}", "url": url, "language": language, "paragraphs": paragraphs,
                     "images": [], "repairs": [], "language_set": [], "partition": 0})  # fmt: skip
    frame = pd.DataFrame([{field.name: row.get(field.name) for field in records.DOCUMENTS} for row in rows])
    keys = REGISTRY.run(ctx, "align_documents", through_partitions(ctx, frame))
    pairs = pd.concat([read_table(store, key) for key in keys])
    chosen = {(a, b): method for a, b, method in zip(pairs["doc_id_a"], pairs["doc_id_b"], pairs["method"], strict=True)}
    assert chosen == {
        ("guide-en", "guide-es"): "url_tokens",
        ("faq-en", "faq-es"): "url_tokens",
        ("kernel-en", "kernel-es"): "tfidf",
    }
    assert pairs["score"].between(0, 1).all()


def test_the_partly_translated_chapter_of_the_local_site_is_paired(site, truth) -> None:
    """The local site's Reference pages as extraction reads them: chapter 11's Spanish page, translated in two of its
    seven sections, is identified as English and paired with the English chapter; every pair is a true one."""
    from bitextflow.counts import StageCounts
    from bitextflow.extract.documents import DocumentBuilder
    from bitextflow.extract.model import WarcResponse
    from bitextflow.extract.shard import document_row
    from bitextflow_local.localsite.truth import site_path

    builder, docroot = DocumentBuilder(), site.site.docroot
    documents = []
    for path in sorted(docroot.glob("reference/*.*.html")):
        url = site.base_url + path.relative_to(docroot).as_posix()
        page = builder.build(WarcResponse(url, path.read_bytes(), 200, "text/html", None, "", 0, ""), StageCounts("extract"))
        assert page is not None, url
        documents.append(Document.from_row(document_row(page, "local-site", 0)))
    chapter = next(doc for doc in documents if doc.url.endswith("reference/ch11.es.html"))
    assert chapter.language == "en" and language_share(chapter, "es") >= MIN_TRANSLATED_SHARE

    pairs, report = align_documents(documents, "en", "es", ["url_tokens", "structure"])
    found = {(site_path(p.url_a), site_path(p.url_b)) for p in pairs}
    expected = {(a, b) for a, b in truth.pairs("en", "es") if a.startswith("reference/")}
    assert found == expected and truth.partly_translated_pairs("en", "es") <= found
    assert report.partly_translated == 1
