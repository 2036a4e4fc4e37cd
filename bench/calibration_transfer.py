"""What a pair without parallel text of its own loses on another pair's margin calibration, and whether Debian's message
catalogs would give it one.

A pair whose language Debian's installation guide lacks (en-ar, en-zh_Hant) is scored with en-es's calibration
(docs/score.md, "Per pair"). For each pair that the guide has, this fits the pair's own calibration on its guide pages
(:func:`bitextflow.score.margin_calibration.calibrate`: Youden's J out of fold, five folds by document) and scores the
same guide examples with two calibrations the pair did not see:

- ``en-es``: the shipped one for the runtime (:data:`bitextflow.score.margin.E5_SMALL_CALIBRATIONS`), what such a pair
  uses today;
- ``catalogs``: one fitted the same way on the pair's Debian message catalogs
  (:func:`bitextflow.score.training_data.catalog_pairs`, which Debian has for Arabic and Traditional Chinese too):
  :data:`CATALOG_DOCUMENTS` documents of :data:`CATALOG_DOCUMENT` consecutive messages, drawn with a fixed seed.

Figures per pair: Youden's J (translations kept minus wrong pairs kept, at each calibration's own threshold) on the
guide's examples for each calibration, ``guide`` being out of fold, and the mean over the pairs. Packages are fetched
with ``apt-get download`` into the cache on first use; the vectors are the project's encoder's (int8 by default).

    .venv/bin/python bench/calibration_transfer.py [--pairs en-ja,en-ru,en-zh,en-ko] [--runtime onnx-int8] --json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

import numpy as np

from bitextflow.errors import BitextflowError
from bitextflow.models import SentenceEncoder
from bitextflow.score import margin_calibration
from bitextflow.score.margin import E5_SMALL_CALIBRATIONS, MarginCalibration
from bitextflow.score.pair_calibrations import CALIBRATED_RUNTIMES, calibration_of
from bitextflow.score.training_data import catalog_pairs, installation_guide_pages

CATALOG_DOCUMENT = 20
CATALOG_DOCUMENTS = 150
SEED = 1


def catalog_documents(language: str) -> list[margin_calibration.Document]:
    pairs = catalog_pairs("en", language).pairs
    documents = [pairs[i : i + CATALOG_DOCUMENT] for i in range(0, len(pairs) - CATALOG_DOCUMENT + 1, CATALOG_DOCUMENT)]
    chosen = random.Random(SEED).sample(range(len(documents)), min(CATALOG_DOCUMENTS, len(documents)))
    return [documents[i] for i in sorted(chosen)]


def j_of(calibration: MarginCalibration, rows: margin_calibration.Examples) -> float:
    kinds = np.asarray(rows.kind)
    scores = calibration.probability(np.asarray(rows.margins[calibration.neighbours]))
    return round(margin_calibration.youden_j(scores, (kinds == "translation").astype(int), calibration.threshold), 4)


def measure(pair: str, encoder: SentenceEncoder) -> dict:
    language = pair.split("-", 1)[1]
    guide = {"installation-guide": [page for page in installation_guide_pages("en", language) if len(page) > 1]}
    if len(guide["installation-guide"]) < margin_calibration.MIN_DOCUMENTS:
        raise BitextflowError(f"Debian's installation guide has too little {language} to measure on; choose a pair it has")
    catalogs = {"catalogs": catalog_documents(language)}
    texts = sorted(
        {text for source in (guide, catalogs) for docs in source.values() for doc in docs for pair_ in doc for text in pair_}
    )
    vectors = dict(zip(texts, encoder.encode(texts, reduced_precision=False), strict=True))
    guide_rows, catalog_rows = margin_calibration.examples(guide, vectors), margin_calibration.examples(catalogs, vectors)
    own = margin_calibration.calibrate(guide_rows)
    return {
        "guide_documents": len(guide["installation-guide"]),
        "catalog_documents": len(catalogs["catalogs"]),
        "youden_j_on_guide": {
            "guide": own["youden_j"],
            "en-es": j_of(E5_SMALL_CALIBRATIONS[encoder.runtime], guide_rows),
            "catalogs": j_of(calibration_of(margin_calibration.calibrate(catalog_rows), pair), guide_rows),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", default="en-ja,en-ru,en-zh,en-ko", help="comma-separated, English first")
    parser.add_argument("--runtime", default="onnx-int8", choices=CALIBRATED_RUNTIMES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    encoder = SentenceEncoder.from_path(None, runtime=args.runtime)
    started = time.monotonic()
    pairs = {}
    for pair in args.pairs.split(","):
        try:
            pairs[pair] = figures = measure(pair, encoder)
        except BitextflowError as error:
            print(f"calibration_transfer: {pair}: {error}", file=sys.stderr)
            return 2
        print(f"{pair}: Youden's J on the guide {figures['youden_j_on_guide']}", file=sys.stderr)
    means = {
        name: round(float(np.mean([p["youden_j_on_guide"][name] for p in pairs.values()])), 4)
        for name in ("guide", "en-es", "catalogs")
    }
    print(f"mean: {means} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    if args.json:
        print(json.dumps({"runtime": args.runtime, "pairs": pairs, "mean_youden_j_on_guide": means}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
