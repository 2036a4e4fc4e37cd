"""Script weights of the length unit (bitextflow.text.lengths): fitted on translated blocks, checked on other text.

The Debian Installation Guide (``installation-guide-amd64``, the package the local site is built from; it holds 20
languages) is translated with po4a, so where an English page and its translation have as many main-content blocks,
block i translates block i. Every such pair of blocks of 40 English characters or more gives one equation: the English
length against the translation's counts of Chinese characters, kana, Hangul and CJK punctuation (every other character
counting one). The weights are the least-squares fit of those equations by relative error, over Japanese, Chinese and
Korean. Printed, per language: the median English/translation ratio and the share of correct block pairs a length
ratio rule of 2.5 would reject, in characters and in the fitted unit; with ``--tatoeba DIR`` (``tatoeba.cmn-eng.*``,
short everyday sentences: text the fit never saw) the same for Chinese there.

    .venv/bin/python bench/script_lengths.py [--tatoeba ../shared/eval/tatoeba] --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bitextflow.extract import structure
from bitextflow.settings import cache_dir
from bitextflow.text.lengths import SCRIPT_WEIGHTS, script_counts, weighted_length

FITTED = ("ja", "zh_CN", "ko")
CHECKED = ("ru", "el", "vi")
MAX_RATIO = 2.5
MIN_ENGLISH_CHARS = 40
GUIDE = "usr/share/doc/installation-guide-amd64"


def counts_row(text: str) -> list[int]:
    """Characters of each :data:`SCRIPT_WEIGHTS` script, and of everything else last."""
    found = script_counts(text)
    counts = [found.get(name, 0) for name in SCRIPT_WEIGHTS]
    return [*counts, len(text) - sum(counts)]


def main_blocks(path: Path) -> list[str]:
    page = structure.page(path.read_text(encoding="utf-8", errors="replace"), f"http://localhost/{path.name}")
    return [p.text for p in page.paragraphs if not p.boilerplate and p.type != "title"] if page else []


def block_pairs(root: Path, language: str) -> list[tuple[str, str]]:
    pairs = []
    for english in sorted((root / "en").glob("*.html")):
        translated = root / language / english.name
        if not translated.exists():
            continue
        a, b = main_blocks(english), main_blocks(translated)
        if len(a) == len(b):
            pairs += [(x, y) for x, y in zip(a, b, strict=True) if len(x) >= MIN_ENGLISH_CHARS]
    return pairs


def fit(pairs: list[tuple[str, str]]) -> list[float]:
    """Per-class weights minimising the relative error of English length = sum of weight x count (others count 1)."""
    counts = np.array([counts_row(b) for _a, b in pairs], dtype=float)
    english = np.array([len(a) for a, _b in pairs], dtype=float)
    scale = 1.0 / english
    weights, *_ = np.linalg.lstsq(counts[:, :-1] * scale[:, None], (english - counts[:, -1]) * scale, rcond=None)
    return [round(float(w), 2) for w in weights]


def ratios(pairs: list[tuple[str, str]]) -> dict[str, float]:
    chars = [len(a) / max(len(b), 1) for a, b in pairs]
    unit = [weighted_length(a) / max(weighted_length(b), 1.0) for a, b in pairs]
    return {
        "pairs": len(pairs),
        "median_ratio_chars": round(statistics.median(chars), 3),
        "median_ratio_unit": round(statistics.median(unit), 3),
        "rejected_chars": round(sum(max(r, 1 / r) > MAX_RATIO for r in chars) / len(chars), 4),
        "rejected_unit": round(sum(max(r, 1 / r) > MAX_RATIO for r in unit) / len(unit), 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tatoeba", type=Path, default=None, help="a folder with tatoeba.cmn-eng.{cmn,eng}")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    debs = sorted(cache_dir("localsite", "debs").glob("installation-guide-amd64_*.deb"))
    if not debs:
        sys.exit("bench/script_lengths.py: no installation-guide-amd64 package in the cache: run `make setup` first")
    with tempfile.TemporaryDirectory() as unpacked:
        subprocess.run(["dpkg-deb", "-x", str(debs[-1]), unpacked], check=True)
        root = Path(unpacked) / GUIDE
        by_language = {language: block_pairs(root, language) for language in FITTED + CHECKED}
    fitted = fit([pair for language in FITTED for pair in by_language[language]])
    shipped = [weight for weight, _ranges in SCRIPT_WEIGHTS.values()]
    result = {
        "fitted_weights": dict(zip(SCRIPT_WEIGHTS, fitted, strict=True)),
        "shipped_weights": dict(zip(SCRIPT_WEIGHTS, shipped, strict=True)),
        "languages": {language: ratios(pairs) for language, pairs in by_language.items() if pairs},
    }
    if args.tatoeba:
        english = (args.tatoeba / "tatoeba.cmn-eng.eng").read_text(encoding="utf-8").splitlines()
        chinese = (args.tatoeba / "tatoeba.cmn-eng.cmn").read_text(encoding="utf-8").splitlines()
        result["tatoeba_cmn"] = ratios(list(zip(english, chinese, strict=True)))
    for name, figures in [*result["languages"].items(), *([("tatoeba_cmn", result["tatoeba_cmn"])] if args.tatoeba else [])]:
        print(
            f"{name:12} {figures['pairs']:5} pairs  median en/xx {figures['median_ratio_chars']:.2f} chars "
            f"{figures['median_ratio_unit']:.2f} unit  over {MAX_RATIO}: {figures['rejected_chars']:.3f} chars "
            f"{figures['rejected_unit']:.3f} unit"
        )
    print(f"fitted {result['fitted_weights']}  shipped {result['shipped_weights']}")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
