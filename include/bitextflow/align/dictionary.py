"""Bilingual lemma dictionaries built from Debian packages, for dictionary-based sentence alignment.

Hunalign-style alignment (:mod:`.lexical`) needs word translations, and nothing can be downloaded
from a model hub here, but Debian ships two kinds of free bilingual data that ``apt-get download``
fetches without root: Apertium language pairs (``apertium-eng-spa``) and FreeDict dictionaries
(``dict-freedict-deu-fra``), whose lemma pairs :mod:`.dictionary_dumps` reads.

Apertium data is preferred where it exists (hand-checked, 32k en-es pairs); otherwise every
FreeDict package of the pair in either direction is merged. A pair with fewer than 10,000 lemma pairs
(FreeDict en-ru: 2,121), or none, is completed through the dictionaries of third languages
(:mod:`.dictionary_pivots`). A pair with no package and no pivot gets ``None`` and a logged reason:
the length-based aligners still work for it.

The result is plain TSV (``lemma_a<TAB>lemma_b``, lower-cased, stripped, sorted, unique) under
``$BITEXTFLOW_CACHE/dictionaries/<a>-<b>/`` (default ``~/.cache/bitextflow``), with a
``manifest.json`` naming every package, its Debian version and the sha256 of the ``.deb`` and of the
TSV, so an alignment can say exactly which dictionary it used and a changed file is rebuilt rather
than trusted.

Beside them, ``lemmas.npz`` holds the same pairs in a compact binary form that loads in a fraction
of a second: each side's distinct lemmas as one UTF-8 text and the pairs as an ``int32`` array of
indices into them (:class:`LemmaPairs`; plain numpy arrays, read with ``allow_pickle=False``). Parsing
the TSV of FreeDict de-en (1.8 million pairs) took 9-15 s per task. The binary form names the TSV
checksum it was made from and :data:`BINARY_FORMAT`; when either differs (a new dictionary version,
a new layout), or the file is damaged (the zip's CRC), it is made again from the checked TSV. Build
ahead of time (``make setup`` does) with::

    python -m bitextflow.align.dictionary en-es de-fr en-hu
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from bitextflow.align.dictionary_dumps import DictionaryUnavailable, direct_pairs, has_packages
from bitextflow.align.dictionary_pivots import MIN_DIRECT_PAIRS, PIVOT_LANGUAGES, through_pivots
from bitextflow.hashing import file_sha256
from bitextflow.settings import cache_dir
from bitextflow.text.languages import language_of_tag, normalise_language
from bitextflow.text.scripts import in_its_script, other_scripts, split_script

log = logging.getLogger(__name__)
# Entries whose letters tell the script a dictionary's side is written in
_SCRIPT_SAMPLE = 2000

#: Bumped when what a dictionary holds changes, so that cached ones are built again (2: small ones completed through
#: pivot languages).
FORMAT_VERSION = 2
TSV_NAME = "lemmas.tsv"
MANIFEST_NAME = "manifest.json"
BINARY_NAME = "lemmas.npz"
#: Layout of :data:`BINARY_NAME`; bumped when it changes, so that files in the old layout are made again.
BINARY_FORMAT = 1


class LemmaPairs(Sequence[tuple[str, str]]):
    """Lemma pairs as each side's distinct lemmas and an ``(n, 2)`` array of indices into them.

    A sequence of ``(left, right)`` tuples to its readers, in the order the pairs were given. Held
    this way because 1.8 million pairs share about 400,000 lemmas a side: the tables and the index
    array load from :data:`BINARY_NAME` in a fraction of a second, where as many Python tuples take
    seconds to build, and a reader can work on each distinct lemma once (:mod:`.lexical`).
    """

    def __init__(self, left: Sequence[str], right: Sequence[str], index: NDArray[np.int32]) -> None:
        self.left, self.right, self.index = tuple(left), tuple(right), index

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]]) -> LemmaPairs:
        """The compact form of ``pairs`` (lemmas numbered in order of first appearance)."""
        left: dict[str, int] = {}
        right: dict[str, int] = {}
        flat = [number for a, b in pairs for number in (left.setdefault(a, len(left)), right.setdefault(b, len(right)))]
        return cls(list(left), list(right), np.array(flat, dtype=np.int32).reshape(-1, 2))

    def swapped(self) -> LemmaPairs:
        """The same pairs with their sides exchanged."""
        return LemmaPairs(self.right, self.left, self.index[:, ::-1])

    def __len__(self) -> int:
        return len(self.index)

    @overload
    def __getitem__(self, position: int) -> tuple[str, str]: ...

    @overload
    def __getitem__(self, position: slice) -> tuple[tuple[str, str], ...]: ...

    def __getitem__(self, position: int | slice) -> tuple[str, str] | tuple[tuple[str, str], ...]:
        if isinstance(position, slice):
            return tuple(self._pairs_of(self.index[position]))
        a, b = self.index[position]
        return self.left[a], self.right[b]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return self._pairs_of(self.index)

    def _pairs_of(self, index: NDArray[np.int32]) -> Iterator[tuple[str, str]]:
        lefts, rights = index[:, 0].tolist(), index[:, 1].tolist()
        return zip(map(self.left.__getitem__, lefts), map(self.right.__getitem__, rights), strict=True)


@dataclass(frozen=True, eq=False)
class BilingualDictionary:
    """Lemma pairs ``(lemma in lang_a, lemma in lang_b)`` and the manifest of where they came from.

    ``pairs`` may be given as any sequence of tuples; it is kept as :class:`LemmaPairs`. Compared
    and hashed by identity (``eq=False``): hashing 100,000 pairs per lookup would cost more than the
    alignment it serves, and caches keyed on a dictionary only need the same object.
    """

    lang_a: str
    lang_b: str
    pairs: LemmaPairs
    manifest: dict[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.pairs, LemmaPairs):
            object.__setattr__(self, "pairs", LemmaPairs.from_pairs(self.pairs))

    def __len__(self) -> int:
        return len(self.pairs)

    def reversed(self) -> BilingualDictionary:
        """The same dictionary seen from ``lang_b`` to ``lang_a``."""
        return BilingualDictionary(self.lang_b, self.lang_a, self.pairs.swapped(), self.manifest)


def default_cache_dir() -> Path:
    """``<cache>/dictionaries`` (:func:`bitextflow.settings.cache_dir`)."""
    return cache_dir("dictionaries")


def _entry_directory(lang_a: str, lang_b: str, cache_dir: Path) -> Path:
    return cache_dir / "-".join(sorted((lang_a, lang_b)))


def tsv_path(lang_a: str, lang_b: str, cache_dir: Path | None = None) -> Path:
    """Where the pair's TSV is, or would be, in the cache."""
    return _entry_directory(normalise_language(lang_a), normalise_language(lang_b), cache_dir or default_cache_dir()) / TSV_NAME


def build_dictionary(lang_a: str, lang_b: str, cache_dir: Path | None = None) -> BilingualDictionary:
    """Download, unpack and convert the pair's Debian packages, completed through pivot languages where they hold few
    pairs (:mod:`.dictionary_pivots`); write TSV and manifest.

    Files are written under a temporary name and renamed, manifest last, so a concurrent or
    interrupted build never leaves a manifest that describes a partial TSV.
    """
    a, b = normalise_language(lang_a), normalise_language(lang_b)
    cache_dir = cache_dir or default_cache_dir()
    if shutil.which("apt-cache") is None or shutil.which("dpkg-deb") is None:
        raise DictionaryUnavailable("apt-cache/dpkg-deb not found: dictionaries are built from Debian packages")
    try:
        pairs, packages = direct_pairs(a, b, cache_dir)
    except DictionaryUnavailable as missing:
        pairs, packages, reason = set(), [], str(missing)
    pivots: list[dict[str, Any]] = []
    if len(pairs) < MIN_DIRECT_PAIRS:
        composed, pivots = through_pivots(a, b, lambda x, y: direct_pairs(x, y, cache_dir), has_packages)
        pairs |= composed
    if not pairs:
        raise DictionaryUnavailable(f"{reason}; nor through {', '.join(PIVOT_LANGUAGES)}")
    sources = [p["name"] for p in packages] + [f"{p['language']} as pivot" for p in pivots]
    log.info("dictionary %s-%s: %d lemma pairs from %s", a, b, len(pairs), ", ".join(sources))
    first, second = sorted((a, b))
    rows = sorted(pairs) if first == a else sorted((y, x) for x, y in pairs)
    dictionary = write_dictionary(first, second, rows, packages, cache_dir, pivots)
    return dictionary if first == a else dictionary.reversed()


def write_dictionary(
    first: str,
    second: str,
    rows: Sequence[tuple[str, str]],
    packages: list[dict[str, Any]],
    cache_dir: Path,
    pivots: list[dict[str, Any]] | None = None,
) -> BilingualDictionary:
    """Write a dictionary's TSV, binary form and manifest into the cache, the manifest last; return it.

    ``first`` and ``second`` are the pair's languages in sorted order, ``rows`` its ``(first, second)``
    lemma pairs, ``packages`` what the manifest says they came from and ``pivots`` the pivot languages
    that completed them (:func:`.dictionary_pivots.through_pivots`).
    """
    directory = _entry_directory(first, second, cache_dir)
    directory.mkdir(parents=True, exist_ok=True)
    tsv = directory / TSV_NAME
    _atomic_write(tsv, "".join(f"{x}\t{y}\n" for x, y in rows).encode("utf-8"))
    tsv_sha256 = file_sha256(tsv)
    pairs = LemmaPairs.from_pairs(rows)
    _write_binary(directory / BINARY_NAME, pairs, tsv_sha256)
    manifest = {
        "format": FORMAT_VERSION,
        "languages": [first, second],
        "pairs": len(rows),
        "tsv": TSV_NAME,
        "tsv_sha256": tsv_sha256,
        "packages": packages,
        "pivots": pivots or [],
        "built": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _atomic_write(directory / MANIFEST_NAME, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    return BilingualDictionary(first, second, pairs, manifest)


def _atomic_write(path: Path, data: bytes) -> None:
    """``data`` into a temporary file beside ``path``, then renamed onto it: readers never see a partial file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    temporary.replace(path)


def read_tsv(path: Path) -> LemmaPairs:
    """The lemma pairs of a dictionary's TSV (what every load parsed before the binary form)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return LemmaPairs.from_pairs((left, right) for left, _, right in (line.partition("\t") for line in lines) if right)


def _lemma_text(lemmas: Sequence[str]) -> NDArray[np.uint8]:
    """One side's distinct lemmas as UTF-8 bytes, a line each (a lemma holds no newline: clean_lemma collapses whitespace)."""
    return np.frombuffer("\n".join(lemmas).encode("utf-8"), dtype=np.uint8)


def _write_binary(path: Path, pairs: LemmaPairs, tsv_sha256: str) -> None:
    """The binary form of ``pairs``, stamped with the checksum of the TSV they were read from."""
    arrays = io.BytesIO()
    np.savez(
        arrays,
        layout=np.int64(BINARY_FORMAT),
        tsv_sha256=np.str_(tsv_sha256),
        left=_lemma_text(pairs.left),
        right=_lemma_text(pairs.right),
        index=pairs.index,
    )
    _atomic_write(path, arrays.getvalue())


def _read_binary(path: Path, tsv_sha256: str) -> LemmaPairs | None:
    """The pairs of a binary form made from the TSV with checksum ``tsv_sha256`` in this layout; None if it is not one."""
    try:
        with np.load(path, allow_pickle=False) as arrays:
            if int(arrays["layout"]) != BINARY_FORMAT or str(arrays["tsv_sha256"]) != tsv_sha256:
                return None
            left, right = (arrays[side].tobytes().decode("utf-8").split("\n") for side in ("left", "right"))
            index = arrays["index"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):  # missing, truncated, or a failed CRC
        return None
    in_tables = index.ndim == 2 and index.shape[1] == 2 and ((0 <= index) & (index < [len(left), len(right)])).all()
    return LemmaPairs(left, right, index) if in_tables else None


def _read_cached(a: str, b: str, cache_dir: Path) -> BilingualDictionary | None:
    """The cached dictionary if its manifest is current and the TSV matches its checksum.

    Read from the binary form, which is made (again) from the TSV when it is missing, stale or damaged.
    """
    directory = _entry_directory(a, b, cache_dir)
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tsv = directory / TSV_NAME
    if manifest.get("format") != FORMAT_VERSION or not tsv.is_file() or file_sha256(tsv) != manifest.get("tsv_sha256"):
        log.info("dictionary %s-%s: cache at %s is stale or damaged; rebuilding", a, b, directory)
        return None
    binary = directory / BINARY_NAME
    pairs = _read_binary(binary, manifest["tsv_sha256"])
    if pairs is None:
        log.info("dictionary %s-%s: making its binary form %s from the TSV", a, b, binary)
        pairs = read_tsv(tsv)
        _write_binary(binary, pairs, manifest["tsv_sha256"])
    first, second = manifest["languages"]
    dictionary = BilingualDictionary(first, second, pairs, manifest)
    return dictionary if first == a else dictionary.reversed()


def load_dictionary(lang_a: str, lang_b: str, cache_dir: Path | None = None, build: bool = True) -> BilingualDictionary | None:
    """The ``lang_a``-``lang_b`` dictionary from the cache, built first if missing and ``build``.

    Returns None, with the reason logged, when the pair has no Debian package or the build cannot
    run (no apt, no ``lt-print``, no registry): a pair without a dictionary still aligns by length.
    """
    a, b = normalise_language(lang_a), normalise_language(lang_b)
    cache_dir = cache_dir or default_cache_dir()
    dictionary = _read_cached(a, b, cache_dir)
    if dictionary is None and not build:
        log.warning("dictionary %s-%s: not in %s and building is off", a, b, cache_dir)
        return None
    if dictionary is None:
        try:
            dictionary = build_dictionary(a, b, cache_dir)
        except (DictionaryUnavailable, OSError, subprocess.CalledProcessError) as error:
            log.warning("dictionary %s-%s unavailable, aligning without it: %s", a, b, error)
            return None
    if elsewise := written_otherwise(dictionary, lang_a, lang_b):
        log.warning(
            "dictionary %s-%s is written in another script than the pair's %s, so its entries would match no word of "
            "the pages: aligning without it", a, b, ", ".join(elsewise),
        )  # fmt: skip
        return None
    return dictionary


def written_otherwise(dictionary: BilingualDictionary, lang_a: str, lang_b: str) -> list[str]:
    """The pair's languages whose side of ``dictionary`` is written in another script of the language, as far as
    letters tell (FreeDict's Serbian is Cyrillic, a ``sr_Latn`` pair's pages Latin; Simplified and Traditional Chinese
    share theirs)."""
    sides = list(zip(*itertools.islice(dictionary.pairs, _SCRIPT_SAMPLE), strict=True)) or [(), ()]
    elsewise = []
    for code, lemmas in zip((language_of_tag(lang_a), language_of_tag(lang_b)), sides, strict=True):
        language, script = split_script(code)
        if (script is None or script in other_scripts(language)) and in_its_script(language, " ".join(lemmas)) != code:
            elsewise.append(code)
    return elsewise


def main(argv: Iterable[str] | None = None) -> int:
    """Build (or check) the dictionaries of the given pairs; exit 1 if any could not be built."""
    parser = argparse.ArgumentParser(description="Build bilingual lemma dictionaries from Debian packages.")
    parser.add_argument("pairs", nargs="+", help="language pairs such as en-es de-fr")
    parser.add_argument("--cache-dir", type=Path, default=None, help=f"default {default_cache_dir()}")
    args = parser.parse_args(None if argv is None else list(argv))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    failed = 0
    for pair in args.pairs:
        lang_a, _, lang_b = pair.partition("-")
        dictionary = load_dictionary(lang_a, lang_b, args.cache_dir)
        if dictionary is None:
            failed += 1
            print(f"{pair}: no dictionary")
            continue
        packages = ", ".join(f"{p['name']} {p['version']}" for p in dictionary.manifest["packages"])
        pivots = ", ".join(f"{p['language']} {p['pairs']}" for p in dictionary.manifest["pivots"])
        print(
            f"{pair}: {len(dictionary)} lemma pairs ({packages or 'no package of its own'}{'; through ' + pivots if pivots else ''})"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
