"""What the extract modules pass between them: a WARC response in, an extracted page with paragraphs out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

# Paragraph types. ``title`` is the page title (never split into sentences); the others come from
# trafilatura's XML (main content) or from the page's block elements (boilerplate).
PARAGRAPH_TYPES = ("title", "heading", "listitem", "text", "cell", "quote")
SENTENCE_SOURCE_TYPES = frozenset({"heading", "listitem", "text", "cell", "quote"})


@dataclass(slots=True)
class WarcResponse:
    """One HTTP response record of a WARC file, with where it came from."""

    url: str
    body: bytes
    status: int
    mime: str  # lower case, no parameters ("text/html")
    http_charset: str | None
    record_id: str
    offset: int  # byte offset of the record in the (compressed) WARC file
    date: str  # WARC-Date
    truncated: str = ""  # WARC-Truncated reason, or "max_page_bytes" when we cut a huge payload
    headers: tuple[tuple[str, str], ...] = ()  # the HTTP response headers (TDMRep, X-Robots-Tag, Content-Language)


@dataclass(slots=True)
class Paragraph:
    type: str
    text: str
    boilerplate: bool = False  # outside the main content (ILSP-FC crawlinfo="boilerplate")
    language: str = "un"
    out_of_language: bool = False  # identified as a language other than the document's
    terms: list[str] = field(default_factory=list)  # domain terms found in it
    link_share: float = 0.0  # share of its block's text inside links in the page (0 when not known)


@dataclass(slots=True)
class PageMetadata:
    title: str = ""
    description: str = ""
    keywords: str = ""
    date: str = ""
    sitename: str = ""


@dataclass
class ExtractedPage:
    """A fetched page on its way to a :class:`bitextflow.records.Document`: built and refined record by record
    (repairs, language, relevance), then written as a row of the documents table."""

    url: str
    warc_offset: int
    warc_record_id: str
    warc_date: str = ""
    encoding: str = ""
    encoding_source: str = ""  # bom | http | meta | detected | fallback
    repairs: list[str] = field(default_factory=list)  # what was fixed on the way (mojibake, truncation, ...)
    metadata: PageMetadata = field(default_factory=PageMetadata)
    language: str = "un"
    language_reliable: bool = False
    language_set: list[tuple[str, float]] = field(default_factory=list)  # (language, share of the main text)
    paragraphs: list[Paragraph] = field(default_factory=list)
    relevance: float = 0.0  # ILSP-FC p
    relevance_terms: int = 0  # ILSP-FC m: unique domain terms found
    images: list[str] = field(default_factory=list)  # <img> file names in page order (document alignment)
    machine_translation: str = ""  # the markup's machine-translation signal (bitextflow.policy.markup), "" when none

    @property
    def doc_id(self) -> str:
        return hashlib.sha1(self.url.encode("utf-8")).hexdigest()[:16]

    @property
    def title(self) -> str:
        return self.metadata.title

    @property
    def main_paragraphs(self) -> list[Paragraph]:
        return [p for p in self.paragraphs if not p.boilerplate and p.type != "title"]

    @property
    def main_text(self) -> str:
        return "\n".join(p.text for p in self.main_paragraphs)

    @property
    def content_hash(self) -> str:
        return hashlib.sha1(self.main_text.encode("utf-8")).hexdigest()
