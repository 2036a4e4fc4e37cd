"""The extract stage on crafted HTML and WARC bytes: reading, encoding, structure, language, relevance,
de-duplication, sentences, and bad input. No network, no services.

The tests of this module against real services; those that need none are tests/unit/test_extract.py's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import lxml.etree
import pyarrow.parquet as pq

from bitextflow.extract import extract_shard
from bitextflow.text.encoding import decode_html
from tests.support import ROOT
from tests.unit.test_extract import assert_same_main_content, make_warc


# -- output unchanged by the speed-ups ------------------------------------------------------------------
def site_pages(docroot: Path) -> list[tuple[str, bytes]]:
    """Every eighth HTML page of the local site (all its languages), and one of them again under another URL."""
    paths = sorted(docroot.rglob("*.html"))[::8]
    pages = [(f"http://site.test/{path.relative_to(docroot).as_posix()}", path.read_bytes()) for path in paths]
    return [*pages, (pages[1][0] + "?copy=1", pages[1][1])]


def shard_digest(result) -> dict[str, list]:
    """Rows and a hash of the rows of each output file, without the fields that vary with each writing of the WARC."""
    digest = {}
    for name, path in (("documents", result.documents), ("rejected", result.rejected), ("sentences", result.sentences)):
        table = pq.read_table(path)
        rows = table.drop_columns(
            [c for c in ("warc_record_id", "warc_date", "warc_offset") if c in table.column_names]
        ).to_pylist()
        text = json.dumps(rows, sort_keys=True, ensure_ascii=False)
        digest[name] = [len(rows), hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]]
    counts = {"documents": result.document_counts.to_dict(), "sentences": result.sentence_counts.to_dict()}
    digest["counts"] = hashlib.sha256(json.dumps(counts, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return digest


# extract_shard's output on site_pages() with the en-es pair's settings, made by the code before the
# speed-ups of 2026-11-23 (commit 5deeda3), then changed on purpose: CLD2 reads extracted text as plain
# text (seven short paragraphs and three language shares moved), and main paragraphs that are mostly link
# text are boilerplate (`extract.max_link_density`: 499 paragraphs, mostly package-name table cells, one
# en/es sentence fewer); see CHANGELOG.md. The input changed once since: the local site gained the partly
# translated reference/ch11.{de,es,fr}.html, so every eighth page is another one from there on (the code is
# the same). A speed-up must not change a row; change this only with a change of output that is meant (and
# say so in CHANGELOG.md). Documents gained the `machine_translation` column (empty on every page of the site;
# without it the rows hash as before: documents 6b628117a298189f, rejected be33235c471c267a). heliport answers first
# since 2026-12-04 (`extract.language_identifier`; with `cld2` the rows hash as before: documents 0e8cbae3c54a6082,
# sentences 913 0270e3e65ce8350d, counts 8d6311f467c91072): 137 paragraphs change language, mostly to the page's own
# ("Die IP-Adresse Ihres Computers." de, not en; the GPL's Spanish text es, not en), 912 sentences. A main paragraph
# trafilatura joined from a list of links has their link share since 2026-12-05 (before: documents 49 40c4f9c6a4cb5530,
# sentences 912 f4e24b9153fd7f8f, counts f032af87bd005300): the home page and two chapter tables of contents
# (install/fr/apd.html, install/de/ch06.html) are navigation, no document, and the home page's links no sentence.
SITE_DIGEST = {
    "documents": [46, "c52cc80bc86028c3"],
    "rejected": [1, "01ec24fdecc0bd93"],
    "sentences": [911, "00f7d017aab503e8"],
    "counts": "574e37ce763fe219",
}


def test_output_on_local_site_pages_is_unchanged(site, tmp_path):
    from bitextflow.config import load_pair_config

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    data = make_warc([(url, "text/html", body) for url, body in site_pages(site.site.docroot)])
    (tmp_path / "shard.warc.gz").write_bytes(data)
    result = extract_shard(
        tmp_path / "shard.warc.gz", tmp_path / "out", warc_key="k/crawl-00000.warc.gz",
        languages={"en", "es"}, config=config.extract, domain=config.domain,
    )  # fmt: skip
    assert shard_digest(result) == SITE_DIGEST


def test_parse_gives_the_tree_trafilatura_makes(site):
    """Our parser (bytes, no per-element Python class lookup) against trafilatura's ``load_html``."""
    from trafilatura.utils import load_html

    from bitextflow.extract.structure import parse

    pages = [decode_html(body).text for _url, body in site_pages(site.site.docroot)]
    pages += [
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN">\n<html><body><p>Doctype with a slash.</p></body></html>',
        "<html/>\n<body><p>A self-closing html tag.</p></body>",
        '<!DOCTYPE html SYSTEM "about:legacy-compat"/>' + " " * 5000 + "\n<html><body><p>A long first line.</p></body></html>",
        "<html><body>"
        + "<p>Many paragraphs on one line.</p>" * 200
        + "\n<p>Controls \x07 after the first lines.</p></body></html>",
        "<html><body><p>Controls \x01\x02 and \ufffe non-characters.</p><form><input value='x'></form></body></html>",
        "<p>Just a fragment</p>",
        "<div><p>Two</p><p>blocks</p></div>",
        '<?xml version="1.0" encoding="iso-8859-1"?><html><body><p>An XML declaration.</p></body></html>',
        "   ",
    ]
    for html in pages:
        ours, theirs = parse(html), load_html(html) if html.strip() else None
        assert (ours is None) == (theirs is None), html[:80]
        if ours is not None:
            assert lxml.etree.tostring(ours) == lxml.etree.tostring(theirs), html[:80]
            assert_same_main_content(ours, theirs, html[:80])
