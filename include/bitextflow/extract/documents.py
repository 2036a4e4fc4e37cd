"""One WARC response to one document: checks, decoding, structure, language, relevance.

:class:`DocumentBuilder` is the per-record path of the stage; every response it refuses is counted
under a named reason, every repair under ``repaired``, and no exception of a single page escapes it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import IO

from bitextflow.config import DomainConfig, ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.extract import language, relevance, structure
from bitextflow.extract.model import ExtractedPage, PageMetadata, Paragraph, WarcResponse
from bitextflow.extract.warc import iter_responses
from bitextflow.text import encoding
from bitextflow.text.languages import UNKNOWN, cld2_top, document_language

log = logging.getLogger(__name__)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Shorter boilerplate ("Home", "Log in"; 60% of the boilerplate blocks of the benchmark pages) takes the
# document's language: CLD2 is guesswork on a word or two, and the calls cost more than the page's text.
MIN_BOILERPLATE_LID_CHARS = 20
TEXT_TYPES = frozenset({"text/plain"})
#: Responses that may make a document (plain text only with extract.plain_text): the ones an opt-out is judged on.
PAGE_TYPES = HTML_TYPES | TEXT_TYPES


class DocumentBuilder:
    """Documents of WARC responses; ``languages``, the pair's, tell which languages beyond CLD2's a page may be in, and
    which language of a group CLD2 does not tell apart (Bosnian, Croatian, Serbian) a page of the group is in."""

    def __init__(self, config: ExtractConfig | None = None, domain: DomainConfig | None = None, languages: Iterable[str] = ()):
        self.config = config or ExtractConfig()
        self.domain = domain
        self.first_opinion = language.first_opinion(self.config.language_identifier)
        self.pair_languages = frozenset(languages)
        self.heliport_only = language.beyond_cld2(self.pair_languages)
        self._matchers: dict[str, relevance.TermMatcher | None] = {}

    def matcher(self, lang: str) -> relevance.TermMatcher | None:
        if lang not in self._matchers:
            terms = self.domain.terms.get(lang, {}) if self.domain else {}
            stem = self.domain.stem_terms if self.domain else True
            self._matchers[lang] = relevance.TermMatcher(terms, lang, stem) if terms else None
        return self._matchers[lang]

    def build(self, response: WarcResponse, counts: StageCounts) -> ExtractedPage | None:
        """The document of ``response``, or None after counting why there is none."""
        try:
            return self._build(response, counts)
        except StageError:  # the worker's, not the page's (an identifier that stopped answering): every page would fail
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page must never fail the shard
            log.warning("extraction failed for %s: %s: %s", response.url, type(exc).__name__, exc)
            counts.drop("extraction_error")
            return None

    def _build(self, response: WarcResponse, counts: StageCounts) -> ExtractedPage | None:
        if response.status != 200:
            counts.drop("http_status_not_200")
            return None
        if response.mime not in HTML_TYPES and not (self.config.plain_text and response.mime in TEXT_TYPES):
            counts.drop("not_html")
            return None
        if not response.body.strip():
            counts.drop("empty_payload")
            return None
        if encoding.binary_signature(response.body):
            counts.drop("binary_payload")
            return None
        decoded = encoding.decode_html(response.body, response.http_charset)
        document = ExtractedPage(
            url=response.url, warc_offset=response.offset, warc_record_id=response.record_id, warc_date=response.date,
            encoding=decoded.encoding, encoding_source=decoded.source,
        )  # fmt: skip
        if response.truncated == "max_page_bytes":
            document.repairs.append("page_cut_to_max_bytes")
        if decoded.refused:  # e.g. charset=undefined or unicode_escape: decoded as if none had been declared
            document.repairs.append("declared_charset_refused")
        if response.mime in TEXT_TYPES:
            paragraphs = [Paragraph("text", text) for text in map(encoding.clean_line, decoded.text.split("\n\n")) if text]
            metadata = PageMetadata()
        else:
            page = structure.page(decoded.text, response.url, self.config)
            if page is None:
                counts.drop("no_main_content")
                return None
            paragraphs, metadata = page.paragraphs, page.metadata
            document.images = page.images
        if not any(not p.boilerplate and p.type != "title" for p in paragraphs):
            counts.drop("no_main_content")
            return None
        document.metadata, document.paragraphs = self._repair(metadata, paragraphs, document)
        self._identify(document)
        relevance.score(document, self.matcher(document.language), self._location_weights())
        for repair in document.repairs:
            counts.repair(repair)
        return document

    def _location_weights(self):
        return self.domain.location_weights if self.domain else relevance.DEFAULT_LOCATION_WEIGHTS

    @staticmethod
    def _repair(metadata: PageMetadata, paragraphs: list[Paragraph], document: ExtractedPage):
        """ftfy on every text (mojibake, leftover entities) or NFC composition, then spaces and controls normalised.

        All texts of the page are repaired at once, one per line (ftfy works line by line). They come
        normalised and on one line (:func:`encoding.clean_line`), so when nothing is repaired they stay.
        """
        texts = [metadata.title, metadata.description, metadata.keywords, metadata.sitename, *(p.text for p in paragraphs)]
        fixed, repair = encoding.repair("\n".join(texts))
        if repair is None:
            return metadata, paragraphs
        lines = fixed.split("\n")
        if len(lines) != len(texts):  # ftfy changed the line structure: repair one by one
            lines = [encoding.repair(text)[0] for text in texts]
        lines = [" ".join(line.split()) for line in lines]
        document.repairs.append(repair)
        metadata = PageMetadata(title=lines[0], description=lines[1], keywords=lines[2], date=metadata.date, sitename=lines[3])
        kept = []
        for paragraph, text in zip(paragraphs, lines[4:], strict=True):
            if text:
                paragraph.text = text
                kept.append(paragraph)
        return metadata, kept

    def _identify(self, document: ExtractedPage) -> None:
        """Document language and language set from the main text; each paragraph's language."""
        text = document.main_text
        found = document_language(text)
        lang, reliable, shares = language.page_language(text, found, self.pair_languages, self.first_opinion)
        document.language, document.language_reliable, document.language_set = lang, reliable, shares
        candidates = frozenset(code for code, _share in shares) | {lang}
        for paragraph in document.paragraphs:
            if paragraph.type == "title":
                paragraph.language = lang
                continue
            if paragraph.boilerplate:  # menus and footers: CLD2 alone, no second opinion
                if len(paragraph.text) < MIN_BOILERPLATE_LID_CHARS or lang in self.heliport_only:
                    paragraph.language = lang
                    continue
                detected, reliable = cld2_top(paragraph.text)
                paragraph.language = (language.among(detected, candidates) or detected) if reliable else lang
                paragraph.out_of_language = paragraph.language != lang
                continue
            detected, _sure = language.identify(paragraph.text, candidates, self.first_opinion)
            paragraph.language = detected if detected != UNKNOWN else lang
            paragraph.out_of_language = paragraph.language != lang


def iter_documents(
    source: str | IO[bytes], counts: StageCounts, config: ExtractConfig | None = None, domain: DomainConfig | None = None
) -> Iterator[ExtractedPage]:
    """Documents of the responses of one WARC file (path or binary stream), without de-duplication."""
    builder = DocumentBuilder(config, domain)
    for response in iter_responses(source, counts, builder.config.max_page_bytes):
        document = builder.build(response, counts)
        if document is not None:
            counts.keep()
            yield document
