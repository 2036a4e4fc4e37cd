"""The score stage's numbers rule, digits only against digits or words, on the margin calibration's pairs.

The pairs are :mod:`bitextflow.score.margin_calibration`'s examples (Tatoeba en-es, the installation guide's pages,
Bible verses; translations, and wrong pairs made as an aligner makes them: a neighbour's translation or a random
sentence), never the Debian Reference, on which bench/release_precision.py measures the release. For each rule: the
translations it drops (``translations_dropped``, lower is better) and the wrong pairs it drops, all of them and those
the margin scorer keeps at its calibrated threshold (``wrong_past_margin_caught``: what the rule adds to the scorer).

- ``digits``: the rule until 2026-11-28, the same numbers in digits on both sides.
- ``digits-or-words``: :func:`bitextflow.score.unmatched_numbers`, a number in digits on one side may be spelled out
  on the other.

Usage, from the project root (encodes the calibration's 13,589 texts once: about 2 minutes with int8 on 2 cores)::

    .venv/bin/python bench/numbers_rule.py [--json] [--data ../shared/eval/tatoeba] [--runtime onnx-int8|torch]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bitextflow.score import numbers_of, unmatched_numbers
from bitextflow.score.margin import E5_SMALL_CALIBRATIONS
from bitextflow.score.margin_calibration import calibration_documents, examples

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "tatoeba"
RULES = {
    "digits": lambda a, b: numbers_of(a) != numbers_of(b),
    "digits-or-words": lambda a, b: unmatched_numbers(a, b, "en", "es"),
}


def measure(data: Path, runtime: str) -> dict:
    from bitextflow.models import SentenceEncoder

    documents = calibration_documents("en", "es", data)
    texts = sorted({text for docs in documents.values() for doc in docs for pair in doc for text in pair})
    vectors = dict(zip(texts, SentenceEncoder.from_path(None, runtime=runtime).encode(texts), strict=True))
    rows = examples(documents, vectors)
    calibration = E5_SMALL_CALIBRATIONS[runtime]
    past_margin = calibration.probability(np.asarray(rows.margins[calibration.neighbours])) >= calibration.threshold
    translation = np.asarray(rows.kind) == "translation"
    sources = np.asarray(rows.source)
    result: dict = {
        "pairs": len(rows.kind),
        "translations": int(translation.sum()),
        "wrong_past_margin": int((past_margin & ~translation).sum()),
    }
    result["rules"] = {}
    for name, rule in RULES.items():
        dropped = np.asarray([rule(a, b) for a, b in rows.pairs])
        result["rules"][name] = {
            "translations_dropped": int((dropped & translation).sum()),
            "translations_dropped_by_source": {
                source: int((dropped & translation & (sources == source)).sum()) for source in sorted(set(rows.source))
            },
            "wrong_dropped_share": round(float(dropped[~translation].mean()), 4),
            "wrong_past_margin_caught": int((dropped & past_margin & ~translation).sum()),
        }
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of LASER's Tatoeba test files")
    parser.add_argument("--runtime", default="onnx-int8", choices=sorted(E5_SMALL_CALIBRATIONS), help="encoder runtime")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"numbers_rule: {args.data} does not exist; pass --data with LASER's Tatoeba test files", file=sys.stderr)
        return 2
    result = measure(args.data, args.runtime)
    print(
        f"{result['pairs']} pairs, {result['translations']} translations, {result['wrong_past_margin']} wrong pairs past the margin"
    )
    for name, figures in result["rules"].items():
        print(f"{name:16} translations dropped {figures['translations_dropped']:4d} {figures['translations_dropped_by_source']}, "
              f"wrong dropped {figures['wrong_dropped_share']:.4f}, wrong past the margin caught {figures['wrong_past_margin_caught']}")  # fmt: skip
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
