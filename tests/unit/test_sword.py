"""The SWORD bible reader: each compressed block decompressed once, whatever pysword does per verse."""

from __future__ import annotations

from pathlib import Path

import pytest

from bitextflow.classify.offline import BIBLES, default_data_dir
from bitextflow.errors import StageError
from bitextflow.training.debian import fetch_packages
from bitextflow.training.sword import open_bible


@pytest.fixture(scope="module")
def english_bible_package() -> Path:
    package, _ = BIBLES["en"]
    return fetch_packages([package], default_data_dir())[package].root  # cached by make setup's offline set


def test_a_book_read_verse_by_verse_decompresses_each_block_once(english_bible_package: Path) -> None:
    bible = open_bible(english_bible_package, BIBLES["en"][1])
    verses = bible.get(books=["Genesis"], clean=False, join="\n").splitlines()
    reads = bible._decompressed_text.cache_info()
    assert len(verses) == 1533
    # this module keeps a book per block: one decompression for the book, not one per verse
    assert (reads.misses, reads.hits) == (1, len(verses) - 1)
    again = open_bible(english_bible_package, BIBLES["en"][1]).get(books=["Genesis"], clean=False, join="\n")
    assert again.splitlines() == verses


def test_a_missing_module_names_the_package_folder(english_bible_package: Path) -> None:
    with pytest.raises(StageError, match="SWORD module NoSuchBible not found under .*delete that folder"):
        open_bible(english_bible_package, "NoSuchBible")
