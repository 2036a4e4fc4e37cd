"""From WARC responses to clean, language-tagged, de-duplicated documents and sentences.

Modules, in the order a record goes through them:

- :mod:`~bitextflow.extract.warc`: FastWARC streaming with provenance, tolerant of damaged files;
- :mod:`~bitextflow.text.encoding`: charset (HTTP, meta, detection), binary sniffing, ftfy, spaces;
- :mod:`~bitextflow.extract.structure`: trafilatura main content as typed paragraphs, boilerplate flagged;
- :mod:`~bitextflow.extract.language`: CLD2 document language set, paragraph language, fastText second opinion;
- :mod:`~bitextflow.extract.relevance`: ILSP-FC domain relevance with stemmed terms;
- :mod:`~bitextflow.extract.dedup`: exact and near-duplicate documents, repeated sentences;
- :mod:`~bitextflow.extract.sentences`: splitting, Moses punctuation, DSI filters;
- :mod:`~bitextflow.extract.documents` (one record) and :mod:`~bitextflow.extract.shard` (one shard).

Every record, document or sentence that does not make it is counted under a named reason.
"""

from bitextflow.extract.documents import DocumentBuilder, iter_documents
from bitextflow.extract.model import ExtractedPage, PageMetadata, Paragraph, WarcResponse
from bitextflow.extract.sentences import Sentence, sentences_of
from bitextflow.extract.shard import ShardResult, extract_shard
from bitextflow.extract.structure import page as extract_page

__all__ = [
    "ExtractedPage",
    "DocumentBuilder",
    "PageMetadata",
    "Paragraph",
    "Sentence",
    "ShardResult",
    "WarcResponse",
    "extract_page",
    "extract_shard",
    "iter_documents",
    "sentences_of",
]
