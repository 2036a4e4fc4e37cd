"""Column schemas of the records each stage writes (DESIGN.md section 3), in one place."""

import pyarrow as pa

PARAGRAPH = pa.struct(
    [
        ("type", pa.string()),  # title | heading | listitem | text | cell | quote | code
        ("text", pa.string()),
        ("language", pa.string()),
        ("boilerplate", pa.bool_()),  # outside the main content (ILSP-FC crawlinfo)
        ("out_of_language", pa.bool_()),  # identified as another language than the document's
        ("terms", pa.list_(pa.string())),  # domain terms found in the paragraph
    ]
)

DOCUMENTS = pa.schema(
    [
        ("doc_id", pa.string()),
        ("url", pa.string()),
        ("warc_key", pa.string()),
        ("warc_offset", pa.int64()),
        ("warc_record_id", pa.string()),
        ("warc_date", pa.string()),
        ("encoding", pa.string()),
        ("encoding_source", pa.string()),  # bom | http | meta | detected | fallback
        ("repairs", pa.list_(pa.string())),  # e.g. mojibake_repaired, page_cut_to_max_bytes
        ("language", pa.string()),
        ("language_reliable", pa.bool_()),
        ("language_set", pa.list_(pa.struct([("language", pa.string()), ("share", pa.float64())]))),
        ("title", pa.string()),
        ("description", pa.string()),
        ("keywords", pa.string()),
        ("date", pa.string()),
        ("paragraphs", pa.list_(PARAGRAPH)),
        ("sentences", pa.int32()),
        ("relevance", pa.float64()),  # ILSP-FC p
        ("relevance_terms", pa.int32()),  # ILSP-FC m
        ("images", pa.list_(pa.string())),  # <img> file names in page order (ILSP-FC image pair detection)
        ("content_hash", pa.string()),
        ("duplicate_of", pa.string()),  # doc_id of the document kept instead of this one (rejected rows)
        ("drop_reason", pa.string()),  # empty for kept documents
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
        ("duplicate", pa.bool_()),  # seen before in the shard, same language (letters only)
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

# Field metadata key: storage.tables.write_table fills a column so marked with nulls when a frame lacks it.
OPTIONAL = b"optional"

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
        # bicleaner-ai's score (score.use_bicleaner); null where it did not run. Optional: writers may omit it.
        pa.field("bicleaner_score", pa.float64(), metadata={OPTIONAL: b"true"}),
        ("domain_relevance", pa.float64()),
        ("domain_terms", pa.string()),
        ("pair_hash", pa.string()),
    ]
)

# classify adds each side's domain probability distribution, a JSON object {label: p} ("" without a classifier).
CLASSIFIED_SENTENCE_PAIRS = pa.schema([*SENTENCE_PAIRS, ("domain_probs_a", pa.string()), ("domain_probs_b", pa.string())])
