"""Incremental runs: unchanged page pairs carry their released sentence pairs over; the rest is re-aligned.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_incremental.py's.
"""

from __future__ import annotations

import pandas as pd

from bitextflow.catalog.incremental import PreviousRelease, page_changes, split_unchanged
from bitextflow.catalog.releases import ReleaseInfo

RELEASE = ReleaseInfo(3, "en-es", "s3://b/releases/en-es/v3/", 3, "2026-11-01T00:00:00Z", "scheduled__1")


def doc_pairs(*urls: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"url_a": [a for a, _ in urls], "url_b": [b for _, b in urls], "method": "url", "score": 1.0})


def previous() -> PreviousRelease:
    pairs = pd.DataFrame(
        {
            "url_a": ["en/1", "en/1", "en/2"],
            "url_b": ["es/1", "es/1", "es/2"],
            "text_a": ["a", "b", "c"],
            "text_b": ["x", "y", "z"],
        }
    )
    hashes = {"en/1": "h1", "es/1": "k1", "en/2": "h2", "es/2": "k2", "en/9": "h9"}
    return PreviousRelease(RELEASE, hashes, {("en/1", "es/1"), ("en/2", "es/2")}, pairs)


def test_only_earlier_pairs_of_unchanged_pages_are_carried() -> None:
    now = {"en/1": "h1", "es/1": "k1", "en/2": "h2", "es/2": "CHANGED", "en/3": "h3", "es/3": "k3"}
    split = split_unchanged(doc_pairs(("en/1", "es/1"), ("en/2", "es/2"), ("en/3", "es/3")), now, previous())
    assert list(split.to_align["url_a"]) == ["en/2", "en/3"]  # a changed side, a new pair
    assert list(split.carried_document_pairs["url_a"]) == ["en/1"]
    assert list(split.carried_sentence_pairs["text_a"]) == ["a", "b"]  # both released pairs of en/1-es/1
    assert split.changes["document_pairs"] == {"carried": 1, "aligned": 2}
    assert split.changes["sentence_pairs_carried"] == 2
    assert split.changes["previous_release"]["version"] == 3


def test_a_new_pairing_of_unchanged_pages_is_aligned_again() -> None:
    now = {"en/1": "h1", "es/2": "k2"}
    split = split_unchanged(doc_pairs(("en/1", "es/2")), now, previous())
    assert len(split.to_align) == 1 and split.carried_sentence_pairs.empty


def test_page_changes_counts_each_kind_and_lists_samples() -> None:
    changes = page_changes({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "d": "4"})
    assert changes["new"] == {"count": 1, "sample": ["c"]}
    assert changes["gone"] == {"count": 1, "sample": ["d"]}
    assert changes["changed"] == {"count": 1, "sample": ["b"]}
    assert changes["unchanged"] == {"count": 1}
