"""Quality gates: Great Expectations suites that stop a run at the stage boundary where data went bad.

Importing this package is cheap; Great Expectations itself is imported when a check runs.
"""

from bitextflow.quality.engine import Check, GateReport, enforce, validate
from bitextflow.quality.release import release_checks
from bitextflow.quality.sentence_pairs import (
    LENGTH_RATIO_COLUMN,
    OPTIONAL_SCORE_COLUMNS,
    REPEATED_HASH_COLUMN,
    SENTENCE_PAIR_COLUMNS,
    PairsSummary,
    length_ratio,
    run_sentence_pairs_check,
    sentence_pairs_check,
    volume_bounds,
    with_helper_columns,
)
from bitextflow.quality.stages import document_pairs_check, documents_check, run_documents_check, sentences_check

__all__ = [
    "LENGTH_RATIO_COLUMN",
    "OPTIONAL_SCORE_COLUMNS",
    "REPEATED_HASH_COLUMN",
    "SENTENCE_PAIR_COLUMNS",
    "Check",
    "PairsSummary",
    "GateReport",
    "document_pairs_check",
    "documents_check",
    "run_documents_check",
    "enforce",
    "length_ratio",
    "release_checks",
    "run_sentence_pairs_check",
    "sentence_pairs_check",
    "sentences_check",
    "validate",
    "volume_bounds",
    "with_helper_columns",
]
