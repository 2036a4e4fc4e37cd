"""Column schemas of the records each stage writes (DESIGN.md section 3), in one place."""

import pyarrow as pa

DOCUMENTS = pa.schema(
    [
        ("doc_id", pa.string()),
        ("url", pa.string()),
        ("warc_key", pa.string()),
        ("warc_offset", pa.int64()),
        ("warc_record_id", pa.string()),
        ("language", pa.string()),
        ("language_reliable", pa.bool_()),
        ("title", pa.string()),
        ("paragraphs", pa.int32()),
        ("sentences", pa.int32()),
        ("content_hash", pa.string()),
        ("sentences_key", pa.string()),
    ]
)

SENTENCES = pa.schema(
    [
        ("doc_id", pa.string()),
        ("url", pa.string()),
        ("language", pa.string()),
        ("paragraph_index", pa.int32()),
        ("paragraph_type", pa.string()),
        ("sentence_index", pa.int32()),
        ("text", pa.string()),
    ]
)

DOCUMENT_PAIRS = pa.schema(
    [
        ("doc_id_a", pa.string()),
        ("doc_id_b", pa.string()),
        ("url_a", pa.string()),
        ("url_b", pa.string()),
        ("sentences_key_a", pa.string()),
        ("sentences_key_b", pa.string()),
        ("method", pa.string()),
        ("score", pa.float64()),
    ]
)

SENTENCE_PAIRS = pa.schema(
    [
        ("url_a", pa.string()),
        ("url_b", pa.string()),
        ("lang_a", pa.string()),
        ("lang_b", pa.string()),
        ("text_a", pa.string()),
        ("text_b", pa.string()),
        ("alignment_score", pa.float64()),
        ("rule_tags", pa.string()),
        ("domain_relevance", pa.float64()),
        ("domain_terms", pa.string()),
        ("pair_hash", pa.string()),
    ]
)
