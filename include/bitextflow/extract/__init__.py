"""From WARC responses to documents with typed paragraphs, language tags and sentences.

Walking-skeleton depth: trafilatura main-content extraction (XML output, so paragraph types survive),
CLD2 document and paragraph language, sentencex sentence splitting with token-count filters.
Every record or sentence that does not make it is counted under a named reason.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

import lxml.etree
import pycld2
import trafilatura
from sentencex import segment
from warcio.archiveiterator import ArchiveIterator

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
# trafilatura XML element -> our paragraph type; the outermost matching element is one paragraph.
PARAGRAPH_TAGS = {"head": "heading", "p": "text", "item": "listitem", "cell": "cell", "quote": "quote"}


@dataclass
class Paragraph:
    type: str
    text: str
    language: str


@dataclass
class Document:
    url: str
    warc_offset: int
    warc_record_id: str
    title: str
    language: str
    language_reliable: bool
    paragraphs: list[Paragraph] = field(default_factory=list)

    @property
    def doc_id(self) -> str:
        return hashlib.sha1(self.url.encode("utf-8")).hexdigest()[:16]

    @property
    def content_hash(self) -> str:
        text = "\n".join(p.text for p in self.paragraphs)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()


def detect_language(text: str) -> tuple[str, bool]:
    """CLD2's top language and whether CLD2 calls it reliable; ``un`` when it cannot tell."""
    try:
        reliable, _bytes, details = pycld2.detect(text)
    except pycld2.error:
        # CLD2 rejects some code points (e.g. lone surrogates); drop them rather than the text.
        cleaned = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
        try:
            reliable, _bytes, details = pycld2.detect(cleaned)
        except pycld2.error:
            return "un", False
    return details[0][1], bool(reliable)


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip("\"' ")
    return None


def _decode(body: bytes, content_type: str) -> str | bytes:
    """The HTTP charset when it is declared and valid; otherwise trafilatura's own detection."""
    charset = _charset(content_type)
    if charset:
        try:
            return body.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass
    return body


def paragraphs_of(html: str | bytes, url: str) -> tuple[str, list[tuple[str, str]]] | None:
    """Title and (type, text) paragraphs of the main content; None when nothing is extracted."""
    xml = trafilatura.extract(
        html, url=url, output_format="xml", with_metadata=True, include_comments=False, include_tables=True,
        favor_recall=True,
    )
    if not xml:
        return None
    root = lxml.etree.fromstring(xml.encode("utf-8"))
    main = root.find("main")
    found: list[tuple[str, str]] = []
    if main is not None:
        for element in main.iter(*PARAGRAPH_TAGS):
            if any(ancestor.tag in PARAGRAPH_TAGS for ancestor in element.iterancestors()):
                continue
            text = " ".join("".join(element.itertext()).split())
            if text:
                found.append((PARAGRAPH_TAGS[element.tag], text))
    return root.get("title") or "", found


def iter_documents(stream: IO[bytes], counts: StageCounts) -> Iterator[Document]:
    """Documents from the HTML 200 responses of a WARC stream; other records are counted and skipped."""
    records = ArchiveIterator(stream)
    for record in records:
        if record.rec_type != "response":
            continue
        counts.seen()
        url = record.rec_headers.get_header("WARC-Target-URI")
        status = record.http_headers.get_statuscode() if record.http_headers else "0"
        content_type = record.http_headers.get_header("Content-Type", "") if record.http_headers else ""
        if status != "200":
            counts.drop("http_status_not_200")
            continue
        if not content_type.lower().startswith(HTML_TYPES):
            counts.drop("not_html")
            continue
        body = record.content_stream().read()
        offset = records.get_record_offset()
        extracted = paragraphs_of(_decode(body, content_type), url)
        if not extracted or not extracted[1]:
            counts.drop("no_main_content")
            continue
        title, typed = extracted
        language, reliable = detect_language("\n".join(text for _type, text in typed))
        paragraphs = []
        for ptype, text in typed:
            plang, preliable = detect_language(text)
            paragraphs.append(Paragraph(ptype, text, plang if preliable else language))
        counts.keep()
        yield Document(url, offset, record.rec_headers.get_header("WARC-Record-ID"), title, language, reliable, paragraphs)


def sentences_of(document: Document, config: ExtractConfig, counts: StageCounts) -> list[dict]:
    """Sentences of the paragraphs in the document's language, filtered by length and language."""
    rows: list[dict] = []
    for p_index, paragraph in enumerate(document.paragraphs):
        pieces = [s.strip() for s in segment(document.language, paragraph.text) if s.strip()]
        counts.seen(len(pieces))
        if paragraph.language != document.language:
            counts.drop("paragraph_other_language", len(pieces))
            continue
        for s_index, sentence in enumerate(pieces):
            tokens = len(sentence.split())
            if tokens < config.min_sentence_tokens:
                counts.drop("too_few_tokens")
                continue
            if tokens > config.max_sentence_tokens:
                counts.drop("too_many_tokens")
                continue
            slang, sreliable = detect_language(sentence)
            if sreliable and slang != document.language:
                counts.drop("sentence_other_language")
                continue
            counts.keep()
            rows.append(
                {
                    "doc_id": document.doc_id,
                    "url": document.url,
                    "language": document.language,
                    "paragraph_index": p_index,
                    "paragraph_type": paragraph.type,
                    "sentence_index": s_index,
                    "text": sentence,
                }
            )
    return rows
