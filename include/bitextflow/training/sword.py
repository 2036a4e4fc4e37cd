"""Bibles in SWORD modules (Debian's ``sword-text-*`` packages), read with pysword.

pysword decompresses a verse's whole zlib block for every verse it returns, and a block holds a chapter or a book:
building the English offline domain set spent 92 of its 121 s in ``zlib.decompress`` (37,791 calls, cProfile, 2-core
Intel Xeon). :func:`open_bible` keeps the last blocks decompressed, so each block is decompressed once when verses
are read in order.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from bitextflow.errors import StageError

#: Blocks kept decompressed: verses are read in order, so the current block and a spare are enough.
BLOCKS_KEPT = 4


def open_bible(package_root: Path, module: str) -> Any:
    """The ``pysword`` bible of SWORD ``module`` in the unpacked package at ``package_root``, reading each compressed
    block once (module docstring)."""
    from pysword.modules import SwordModules

    modules = SwordModules(str(package_root / "usr" / "share" / "sword"))
    if module not in modules.parse_modules():
        raise StageError(f"SWORD module {module} not found under {package_root}; delete that folder to unpack the package again")
    bible = modules.get_bible_from_module(module)
    # pysword's per-verse reader calls this (testament, block number) -> bytes method on every verse
    bible._decompressed_text = functools.lru_cache(maxsize=BLOCKS_KEPT)(bible._decompressed_text)
    return bible
