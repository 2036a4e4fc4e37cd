"""Common Crawl by its index: selection and ranged fetches at 1x and 10x the index, each task in a process of its own.

A generated Common Crawl (``bitextflow_local.localsite.ccindex``: ``--sites`` sites per x, a fifth of them bilingual,
records shuffled across WARC files of ``--records-per-warc`` records, an index with Common Crawl's schema sorted by
SURT URL in ``--index-files`` files per x) lies in a bucket of a real SeaweedFS server. The index stages of an en-es
run (``cc_sites``, ``cc_select``, ``cc_records``, ``cc_fetch``) run as the DAG lists their tasks, each task in a fresh
Python process (``bench/scale.py``'s child, which prints its peak RSS, VmHWM), ``--workers`` at a time. The run is
cut as a deployment cuts a growing one: index files, index tasks and site partitions grow with the x, so a task's
share stays the same while the index grows tenfold; the goal is each stage's largest task at 10x within 1.25x of 1x.

Figures (of the largest size): ``index_rows_per_s``, rows of the index that ``cc_sites``'s scan (the full pass)
reads per second, and ``records_per_s``, records the ``cc_fetch`` tasks write into their shards per second (after
the opt-outs of the default policy: each host's robots.txt capture read first, pages it refuses never read, pages
that reserve themselves read and set aside; ``ranged_reads_per_s`` counts every record read), both timed again in
this process one task after the other (a task process's start, about 5 s of imports, would swamp them); and
``bytes_read_fraction``, the bytes those ranged GETs read (robots.txt captures and pages) over the bytes of the WARC
files that hold those records (what ingesting those files whole would read). The child processes give the peak RSS
and the tasks' wall seconds (``runs``). ``guard_us_per_record``: the CPU the opt-out guard adds per record, timed
alone on the bilingual pages of ``--sites`` sites in memory: the site's verdict at admission (robots.txt for the
default agents) and reading a fetched record's own declarations (TDMRep, noai).

Usage, from the project root::

    .venv/bin/python bench/cc_select.py [--json] [--scales 1,10] [--sites 500] [--index-files 1]
        [--records-per-warc 200] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402  (bench/ is not a package: scale.py's task runner, which measures a task in a child)

STAGES = ("cc_sites", "cc_select", "cc_records", "cc_fetch")


def measure_scale(scale_x: int, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    from bitextflow.catalog.status import collect_counts
    from bitextflow.config import load_pair_config
    from bitextflow.stages.registry import REGISTRY, as_inputs, run_context, task_inputs
    from bitextflow.storage import ObjectStore, StorageSettings
    from bitextflow_local.localsite.ccindex import build_index

    settings = StorageSettings.from_env(env)
    source = ObjectStore(settings, f"commoncrawl-{scale_x}x")
    source.ensure_bucket()
    started = time.monotonic()
    generated = build_index(
        source, sites=args.sites * scale_x, records_per_warc=args.records_per_warc, index_files=args.index_files * scale_x
    )
    print(f"{scale_x}x: {generated.sites} sites, {generated.index_rows} index rows, {len(generated.warc_bytes)} WARC files "
          f"(built in {time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)  # fmt: skip
    overrides = generated.overrides() | {
        "extract.site_partitions": args.index_files * scale_x,
        "crawl.index.max_tasks": args.index_files * scale_x,
        "crawl.warc_max_bytes": 1_000_000,
    }
    run_id = f"cc_select_{scale_x}x"
    ctx = run_context(load_pair_config(scale.PAIR_CONFIG).with_overrides(overrides), ObjectStore(settings, scale.BUCKET), run_id)
    figures: dict[str, Any] = {}
    upstream: list[str] = []
    for stage in STAGES:
        clock = time.monotonic()
        tasks = task_inputs(ctx, REGISTRY.get(stage), upstream)
        specs = [{"stage": stage, "inputs": as_inputs(inputs), "overrides": overrides, "run_id": run_id} for inputs in tasks]
        with ThreadPoolExecutor(max(1, args.workers)) as pool:
            results = list(pool.map(lambda spec: scale._child(spec, env), specs))
        seconds = time.monotonic() - clock
        upstream = as_inputs([result["outputs"] for result in results])
        (counts,) = [c for c in collect_counts(ctx.store, ctx.config.pair, run_id, (stage,)) if c.stage == stage]
        figures[stage] = {
            "tasks": len(tasks),
            "in": counts.items_in,
            "kept": counts.kept,
            "seconds": round(seconds, 2),
            "peak_rss_mb": round(max(result["peak_rss_kib"] for result in results) / 1024, 1),
        }
        print(f"  {stage:11} {len(tasks):3} tasks  in {counts.items_in:7}  kept {counts.kept:7}  {seconds:6.1f} s  "
              f"peak {figures[stage]['peak_rss_mb']:6.1f} MB", file=sys.stderr, flush=True)  # fmt: skip
    ranged = generated.ranged_reads()
    read_files = {row.warc_filename for row in ranged}
    return {
        "sites": generated.sites,
        "bilingual_sites": len(generated.bilingual_sites),
        "index_rows": figures["cc_sites"]["in"],
        "records_fetched": figures["cc_fetch"]["kept"],
        "records_read": len(ranged),
        "bytes_fetched": sum(len(ctx.store.get_bytes(key)) for key in upstream),
        "bytes_read": sum(row.length for row in ranged),
        "bytes_of_read_warc_files": sum(generated.warc_bytes[name] for name in read_files),
        **speeds(ctx, len(ranged)),
        "stages": figures,
    }


def speeds(ctx: Any, records_read: int) -> dict[str, float]:
    """The scan and the fetch timed in this process, without a task process's start (imports) in the clock: every
    index file's site counts (the full pass), then every cc_fetch task again from scratch."""
    from bitextflow.catalog.ccindex import CrawlIndex
    from bitextflow.stages.registry import REGISTRY, run_stage, task_inputs

    index = CrawlIndex(ctx.store, ctx.config)
    files = index.files()
    clock = time.monotonic()
    rows = sum(index.site_counts(uri)[1].items_in for uri in files)
    scan_seconds = time.monotonic() - clock
    ctx.store.delete_prefix(ctx.key("cc_fetch", ""))
    fetch = REGISTRY.get("cc_fetch")
    clock = time.monotonic()
    tasks = task_inputs(ctx, fetch, ctx.outputs("cc_records", REGISTRY.get("cc_records").outputs))
    for inputs in tasks:
        run_stage(ctx, fetch, [inputs])
    fetch_seconds = time.monotonic() - clock
    fetched = sum(ctx.store.get_json(ctx.key("cc_fetch", f"{name}.counts.json"))["kept"] for name in _fetch_names(tasks))
    return {
        "index_rows_per_s": round(rows / scan_seconds, 1),
        "records_per_s": round(fetched / fetch_seconds, 1),
        "ranged_reads_per_s": round(records_read / fetch_seconds, 1),
    }


def _fetch_names(inputs_keys: list[Any]) -> list[str]:
    return [str(key).rsplit("/", 1)[1].removesuffix(".inputs.json") for key in inputs_keys]


def guard_costs(sites: int, repeats: int = 3) -> dict[str, float]:
    """Microseconds a record, the best of ``repeats``: ``site_verdict`` (the admission's robots.txt verdict) and
    ``declared_optout`` (a fetched record's own TDMRep and noai), on the generated index's bilingual pages."""
    from bitextflow.catalog.cc_record_checks import declared_optout
    from bitextflow.config import PolicyConfig
    from bitextflow.policy import OptOuts, SiteFiles
    from bitextflow_local.localsite.ccindex import BILINGUAL_KINDS, KINDS, robots_captures, site_captures
    from bitextflow_local.localsite.warcs import WarcPage, warc_record

    pages = [c for k in range(sites) if KINDS[k % len(KINDS)] in BILINGUAL_KINDS for c in site_captures(k) if c.status == 200]
    optouts = OptOuts(PolicyConfig(), "bitextflow")
    for robots in robots_captures(pages):
        optouts.learn(SiteFiles(f"http://{robots.host}", robots.body if robots.status == 200 else robots.status))
    records = [warc_record(WarcPage(c.url, c.lang, c.text), "200 OK", "text/html; charset=utf-8", None, c.headers, c.head)
               for c in pages]  # fmt: skip
    best = {"site_verdict": float("inf"), "declared_optout": float("inf")}
    for _ in range(repeats):
        clock = time.perf_counter()
        for capture in pages:
            optouts.site_verdict(capture.url)
        best["site_verdict"] = min(best["site_verdict"], time.perf_counter() - clock)
        clock = time.perf_counter()
        for record in records:
            declared_optout(optouts, record, 1 << 20)
        best["declared_optout"] = min(best["declared_optout"], time.perf_counter() - clock)
    return {name: round(seconds / len(pages) * 1e6, 1) for name, seconds in best.items()}


def summary(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """BENCH.md's shape (figures of the largest size at the top level), and each size's run."""
    small, large = runs
    last = runs[large]
    stages = {
        stage: {
            "tasks": {label: runs[label]["stages"][stage]["tasks"] for label in runs},
            "peak_rss_mb": {label: runs[label]["stages"][stage]["peak_rss_mb"] for label in runs},
            "peak_rss_ratio": round(last["stages"][stage]["peak_rss_mb"] / runs[small]["stages"][stage]["peak_rss_mb"], 3),
        }
        for stage in STAGES
    }
    worst = max(figures["peak_rss_ratio"] for figures in stages.values())
    return {
        "index_rows_per_s": last["index_rows_per_s"],
        "records_per_s": last["records_per_s"],
        "ranged_reads_per_s": last["ranged_reads_per_s"],
        "bytes_read_fraction": round(last["bytes_read"] / last["bytes_of_read_warc_files"], 4),
        "stages": stages,
        "worst_peak_rss_ratio": worst,
        "goal_peak_rss_ratio": scale.RSS_GOAL,
        "goal_met": worst <= scale.RSS_GOAL,
        "runs": runs,
        "load_average": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object, last")
    parser.add_argument("--scales", default="1,10", help="sizes to run, in x of the base (default 1,10)")
    parser.add_argument("--sites", type=int, default=500, help="sites per x (default 500; a fifth bilingual)")
    parser.add_argument("--index-files", type=int, default=1, help="index files, index tasks and site partitions per x")
    parser.add_argument("--records-per-warc", type=int, default=200, help="records a generated WARC file holds")
    parser.add_argument("--workers", type=int, default=2, help="task processes at a time (default 2)")
    args = parser.parse_args()
    from bitextflow_local.services.seaweed import SeaweedServer

    runs = {}
    with (
        tempfile.TemporaryDirectory(prefix="bitextflow-cc-select-") as tmp,
        SeaweedServer(Path(tmp) / "s3", [scale.BUCKET]) as s3,
    ):
        env = {**os.environ, **s3.env()}
        os.environ.update(s3.env())
        for scale_x in (int(value) for value in args.scales.split(",")):
            runs[f"{scale_x}x"] = measure_scale(scale_x, args, env)
    figures = summary(runs) | {"guard_us_per_record": guard_costs(args.sites)}
    if not args.json:
        for stage, row in figures["stages"].items():
            print(f"{stage:11} tasks {row['tasks']}  peak RSS MB {row['peak_rss_mb']}  ratio {row['peak_rss_ratio']}")
        print(f"index rows/s {figures['index_rows_per_s']}  records/s {figures['records_per_s']}  "
              f"bytes read fraction {figures['bytes_read_fraction']}")  # fmt: skip
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
