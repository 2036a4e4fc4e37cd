"""Quality gates: Great Expectations suites that stop a run before bad data is released.

Importing this package is cheap; Great Expectations itself is imported when a check runs.
"""

from bitextflow.quality.sentence_pairs import (
    LENGTH_RATIO_COLUMN,
    REPEATED_HASH_COLUMN,
    SENTENCE_PAIR_COLUMNS,
    GateReport,
    check_sentence_pairs,
    enforce,
    length_ratio,
)

__all__ = [
    "LENGTH_RATIO_COLUMN",
    "REPEATED_HASH_COLUMN",
    "SENTENCE_PAIR_COLUMNS",
    "GateReport",
    "check_sentence_pairs",
    "enforce",
    "length_ratio",
]
