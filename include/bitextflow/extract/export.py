"""ILSP-FC-style per-document export for reading: cesDoc XML and JSON Lines (``extract.export_formats``).

The XML follows the ILSP Focused Crawler's exporter (Papavassiliou et al., 2013, "ILSP-FC, a focused
crawler for parallel and monolingual corpora"): a ``cesDoc`` with a ``cesHeader`` (title, source URL,
format, date, language set, keywords, domain with the relevance score and matched terms) and a body of
``<p>`` elements in page order carrying ``type`` (title, heading, listitem, text, ...), ``crawlinfo``
(``boilerplate`` outside the main content, ``ooi-lang`` in another language than the document's),
``lang`` and ``topic`` (the domain terms found in the paragraph). Provenance (WARC key, offset, record
id) goes into ``annotations``. JSON Lines holds the documents' rows as they are in Parquet.

Both are written from a shard's documents Parquet, so any past run can be exported again.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from lxml import etree

from bitextflow.text.markup import xml_safe

XCES = "http://www.xces.org/schema/2003"


def _add(parent: etree._Element, tag: str, text: Any = None, **attributes: str) -> etree._Element:
    # URLs, WARC record ids, titles and keywords come from the web: a control character in one must not fail the shard
    element = etree.SubElement(parent, tag, {k: xml_safe(v) for k, v in attributes.items() if v})
    if text not in (None, ""):
        element.text = xml_safe(str(text))
    return element


def document_xml(row: dict[str, Any], domain: str = "") -> bytes:
    """One document (a ``records.DOCUMENTS`` row) as a cesDoc XML file."""
    root = etree.Element("cesDoc", {"version": "0.4"}, nsmap={None: XCES})
    header = _add(root, "cesHeader", version="0.4")
    file_desc = _add(header, "fileDesc")
    _add(_add(file_desc, "titleStmt"), "title", row["title"])
    source = _add(_add(_add(file_desc, "sourceDesc"), "biblStruct"), "monogr")
    _add(source, "title", row["title"])
    imprint = _add(source, "imprint")
    _add(imprint, "format", "text/html", encoding=row["encoding"])
    _add(imprint, "pubDate", row["date"])
    _add(imprint, "eAddress", row["url"], type="web")
    profile = _add(header, "profileDesc")
    languages = _add(profile, "langUsage")
    for entry in row["language_set"] or [{"language": row["language"], "share": 1.0}]:
        _add(languages, "language", iso639=entry["language"], share=f"{entry['share']:.2f}")
    text_class = _add(profile, "textClass")
    keywords = _add(text_class, "keywords")
    for keyword in filter(None, (part.strip() for part in (row["keywords"] or "").split(","))):
        _add(keywords, "keyTerm", keyword)
    _add(text_class, "domain", domain, relevance=f"{row['relevance']:g}", terms=str(row["relevance_terms"]))
    annotations = _add(profile, "annotations")
    _add(annotations, "annotation", row["description"], type="description")
    _add(annotations, "annotation", row["warc_key"], type="warc", offset=str(row["warc_offset"]), record=row["warc_record_id"])
    body = _add(_add(root, "text"), "body")
    for index, paragraph in enumerate(row["paragraphs"], start=1):
        crawlinfo = "boilerplate" if paragraph["boilerplate"] else "ooi-lang" if paragraph["out_of_language"] else ""
        _add(
            body, "p", paragraph["text"], id=f"p{index}", type=paragraph["type"], crawlinfo=crawlinfo,
            lang=paragraph["language"], topic=";".join(paragraph["terms"] or ()),
        )  # fmt: skip
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def _rows(documents: Path) -> Iterator[dict[str, Any]]:
    for batch in pq.ParquetFile(documents).iter_batches(batch_size=64):
        yield from batch.to_pylist()


def export_documents(documents: Path, formats: Iterable[str], domain: str = "") -> Iterator[tuple[str, bytes, str]]:
    """(file name, bytes, content type) of the export of a documents Parquet file.

    ``xml``: one ``<doc_id>.xml`` per document; ``jsonl``: all documents in ``documents.jsonl.gz``.
    """
    formats = set(formats)
    if not formats:
        return
    compressed = io.BytesIO()
    with gzip.GzipFile(fileobj=compressed, mode="wb", mtime=0) as jsonl:
        for row in _rows(documents):
            if "xml" in formats:
                yield f"{row['doc_id']}.xml", document_xml(row, domain), "application/xml"
            if "jsonl" in formats:
                jsonl.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
    if "jsonl" in formats:
        yield "documents.jsonl.gz", compressed.getvalue(), "application/gzip"
