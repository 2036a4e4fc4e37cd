"""Parallel text available offline for training a bicleaner-ai model: Debian's SWORD Bible packages.

Verse numbering is shared across translations, so two Bibles read verse by verse are a verse-aligned
parallel corpus (31,000 verses for a whole Bible). The packages are fetched with ``apt-get download``
and unpacked with ``dpkg -x`` into the cache (:func:`bitextflow.localsite.packages.fetch_packages`),
and read with pysword.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from bitextflow.classify.offline import BIBLES  # language -> (Debian package, SWORD module)
from bitextflow.errors import StageError
from bitextflow.localsite.packages import fetch_packages

MAX_VERSE_CHARACTERS = 2000
_SPACE = re.compile(r"\s+")
# The WEB module drops the space after a comma where a footnote marker stood ("Christ,the").
_MISSING_SPACE = re.compile(r"([,;:])(?=[^\W\d_])")


def default_cache_dir() -> Path:
    """``$BITEXTFLOW_CACHE/bible``, else ``~/.cache/bitextflow/bible``."""
    root = os.environ.get("BITEXTFLOW_CACHE") or Path.home() / ".cache" / "bitextflow"
    return Path(root) / "bible"


def bible_verse_pairs(lang_a: str, lang_b: str, cache_dir: Path | None = None) -> list[tuple[str, str]]:
    """Verse pairs of the two languages' Bibles, in canonical order, kept as ``verses-<a>-<b>.tsv`` in the cache.

    Reading the modules takes minutes of pysword decompression, hence the cached TSV.
    """
    cache_dir = cache_dir or default_cache_dir()
    cached = cache_dir / f"verses-{lang_a}-{lang_b}.tsv"
    if not cached.is_file():
        pairs = list(_read_verse_pairs(lang_a, lang_b, cache_dir))
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        partial.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
        partial.replace(cached)
    return [tuple(line.split("\t")) for line in cached.read_text(encoding="utf-8").splitlines()]  # type: ignore[misc]


def _read_verse_pairs(lang_a: str, lang_b: str, cache_dir: Path) -> Iterator[tuple[str, str]]:
    """Verses empty on either side are skipped, and so are the few that pysword returns run together with
    the rest of the book (longer than any verse)."""
    missing = [lang for lang in (lang_a, lang_b) if lang not in BIBLES]
    if missing:
        raise StageError(f"no Bible package known for {', '.join(missing)}; known: {', '.join(sorted(BIBLES))}")
    fetched = fetch_packages([BIBLES[lang_a][0], BIBLES[lang_b][0]], cache_dir)
    bible_a = _open_bible(fetched[BIBLES[lang_a][0]].root, BIBLES[lang_a][1])
    bible_b = _open_bible(fetched[BIBLES[lang_b][0]].root, BIBLES[lang_b][1])
    books_b = {book.name: book for testament in bible_b.get_structure().get_books().values() for book in testament}
    for testament in ("ot", "nt"):
        # The English WEB has the deuterocanonical books, the Reina-Valera does not: only shared books pair up.
        for book_a in (book for book in bible_a.get_structure().get_books()[testament] if book.name in books_b):
            book_b = books_b[book_a.name]
            # One read per book (pysword decompresses a whole block per call); split into chapters by each
            # module's own versification, where a chapter's extra verses at the end have no partner.
            chapters_a = _chapters(list(bible_a.get_iter(books=[book_a.name])), book_a.chapter_lengths)
            chapters_b = _chapters(list(bible_b.get_iter(books=[book_b.name])), book_b.chapter_lengths)
            for verses_a, verses_b in zip(chapters_a, chapters_b, strict=False):
                for text_a, text_b in zip(verses_a, verses_b, strict=False):
                    a, b = _clean(text_a), _clean(text_b)
                    if a and b and max(len(a), len(b)) <= MAX_VERSE_CHARACTERS:
                        yield a, b


def _chapters(verses: list[str], lengths: list[int]) -> list[list[str]]:
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    return [verses[start : start + length] for start, length in zip(starts, lengths, strict=True)]


def _open_bible(package_root: Path, module: str):  # noqa: ANN202 - pysword has no type hints
    from pysword.modules import SwordModules

    modules = SwordModules(str(package_root / "usr" / "share" / "sword"))
    if module not in modules.parse_modules():
        raise StageError(f"SWORD module {module} not found under {package_root}; delete that folder to unpack the package again")
    return modules.get_bible_from_module(module)


def _clean(verse: str) -> str:
    """One line, single spaces, no tab (the cache and the trainer read TSV)."""
    return _MISSING_SPACE.sub(r"\1 ", _SPACE.sub(" ", verse).strip())
