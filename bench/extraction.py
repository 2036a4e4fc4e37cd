"""Main-text extraction quality: our extract stage next to bare ``trafilatura.extract`` with its defaults.

Two gold formats (see ../shared/eval/README.md), recognised from the folder's contents:

- ``ground-truth.json`` + ``html/<sha256>.html.gz`` (scrapinghub article-extraction-benchmark): the
  benchmark's own metric, re-implemented: token 4-gram shingles (tokens = ``\\w+`` runs) counted as
  multisets; per document tp/fp/fn normalised to sum 1; precision averaged over documents with any
  prediction or gold shingles, recall likewise; F1 from the two averages (``metric: shingle4``).
- ``evaldata.json`` + ``html/<file>.gz`` (trafilatura's evaluation set): whitespace-normalised
  substring matching of snippets; a ``with`` snippet found is a true positive, missing a false
  negative; a ``without`` snippet found is a false positive (``metric: snippets``), summed over pages.

"Ours" is the whole per-record path of the extract stage (:class:`bitextflow.extract.DocumentBuilder`:
binary sniffing, charset choice, trafilatura with the configured focus, boilerplate flagging, ftfy,
normalisation): its main-content paragraphs (not the title, not boilerplate), one per line.
"trafilatura" is ``trafilatura.extract(html_bytes)`` with every default.

Usage, from the project root::

    .venv/bin/python bench/extraction.py [--json] [--data ../shared/eval/scrapinghub_article_extraction]
        [--focus recall|balanced|precision] [--limit N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import mean

import trafilatura

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract import DocumentBuilder, WarcResponse

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "scrapinghub_article_extraction"
_TOKEN = re.compile(r"\w+", re.UNICODE)


# -- metrics ----------------------------------------------------------------------------------------
def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i : i + n])


def shingle_counts(gold: str, predicted: str) -> tuple[float, float, float]:
    """(tp, fp, fn) over 4-gram shingle multisets, normalised to sum to 1 (the benchmark's definition)."""
    truth, pred = shingles(gold), shingles(predicted)
    tp = sum((truth & pred).values())
    fp = sum((pred - truth).values())
    fn = sum((truth - pred).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def _precision(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fp == 0 else tp / (tp + fp)


def _recall(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fn == 0 else tp / (tp + fn)


def shingle_metrics(per_document: Sequence[tuple[float, float, float]]) -> dict[str, float]:
    precision = mean([_precision(*c) for c in per_document if c[0] + c[1] > 0] or [0.0])
    recall = mean([_recall(*c) for c in per_document if c[0] + c[2] > 0] or [0.0])
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _squash(text: str) -> str:
    return " ".join(text.split())


def snippet_counts(predicted: str, with_: Sequence[str], without: Sequence[str]) -> tuple[int, int, int]:
    text = _squash(predicted)
    tp = sum(1 for s in with_ if _squash(s) in text)
    fp = sum(1 for s in without if _squash(s) in text)
    return tp, fp, len(with_) - tp


def snippet_metrics(per_document: Sequence[tuple[int, int, int]]) -> dict[str, float]:
    tp, fp, fn = (sum(c[i] for c in per_document) for i in range(3))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


# -- extractors -------------------------------------------------------------------------------------
def ours(focus: str) -> Callable[[bytes, str], str]:
    builder = DocumentBuilder(ExtractConfig(extraction_focus=focus))

    def run(html: bytes, url: str) -> str:
        response = WarcResponse(
            url=url, body=html, status=200, mime="text/html", http_charset=None, record_id="", offset=0, date=""
        )
        document = builder.build(response, StageCounts("bench"))
        return document.main_text if document is not None else ""

    return run


def bare_trafilatura(html: bytes, url: str) -> str:
    return trafilatura.extract(html) or ""


# -- data -------------------------------------------------------------------------------------------
def load(data: Path) -> tuple[str, list[dict]]:
    """('shingle4' | 'snippets', items with html bytes and gold)."""
    if (data / "ground-truth.json").is_file():
        truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
        items = [
            {"id": key, "url": value.get("url", ""), "html": gzip.decompress((data / "html" / f"{key}.html.gz").read_bytes()),
             "gold": value.get("articleBody", "")}
            for key, value in sorted(truth.items()) if (data / "html" / f"{key}.html.gz").is_file()
        ]  # fmt: skip
        return "shingle4", items
    if (data / "evaldata.json").is_file():
        evaldata = json.loads((data / "evaldata.json").read_text(encoding="utf-8"))
        items = []
        for url, value in sorted(evaldata.items()):
            path = data / "html" / f"{value['file']}.gz"
            if not path.is_file():
                path = data / "html" / value["file"]
            if not path.is_file():
                continue
            raw = path.read_bytes()
            items.append({"id": value["file"], "url": url, "html": gzip.decompress(raw) if path.suffix == ".gz" else raw,
                          "with": value.get("with", []), "without": value.get("without", [])})  # fmt: skip
        return "snippets", items
    raise FileNotFoundError(f"{data}: neither ground-truth.json (scrapinghub format) nor evaldata.json (trafilatura format)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"gold folder (default {DEFAULT_DATA})")
    parser.add_argument("--focus", default=ExtractConfig().extraction_focus, choices=["recall", "balanced", "precision"],
                        help="extract.extraction_focus for our stage (default: the config default)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages (0: all)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    try:
        metric, items = load(args.data)
    except (FileNotFoundError, NotADirectoryError) as exc:
        print(f"extraction: gold data not found: {exc}", file=sys.stderr)
        return 2
    if args.limit:
        items = items[: args.limit]
    extractors = {"ours": ours(args.focus), "trafilatura": bare_trafilatura}
    results, seconds = {}, {}
    for name, extract in extractors.items():
        per_document = []
        started = time.perf_counter()
        for item in items:
            text = extract(item["html"], item["url"])
            if metric == "shingle4":
                per_document.append(shingle_counts(item["gold"], text))
            else:
                per_document.append(snippet_counts(text, item["with"], item["without"]))
        seconds[name] = time.perf_counter() - started
        results[name] = shingle_metrics(per_document) if metric == "shingle4" else snippet_metrics(per_document)

    print(f"{args.data} ({len(items)} pages), metric {metric}, our focus {args.focus}")
    print(f"{'extractor':<12} {'precision':>9} {'recall':>7} {'F1':>6} {'pages/s':>8}")
    for name, m in results.items():
        print(f"{name:<12} {m['precision']:>9.3f} {m['recall']:>7.3f} {m['f1']:>6.3f} {len(items) / seconds[name]:>8.1f}")
    summary = {
        "metric": metric,
        "documents": len(items),
        "data": str(args.data),
        "focus": args.focus,
        **{name: {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()} for name, m in results.items()},
        "pages_per_s": {name: round(len(items) / s, 2) for name, s in seconds.items()},
    }
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
