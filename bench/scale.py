"""Scale: every stage of a run at 1x and 10x, each task in a process of its own, its peak memory measured.

Two inputs, each at two sizes (``--scales``, 1 and 10 by default):

- ``web``: a generated web of ``--sites`` sites per x (20 and 200 by default) served on loopback addresses
  (``bitextflow-local site multi``: small bilingual documentation sites dealt from the local Debian
  documentation site, with translated and untranslated pages, one address each), crawled by the pipeline;
- ``ingest``: ``--warcs`` small WARC files per x (``bitextflow_local.localsite.warcs``: one page each, pages
  of many sites, unique texts) ingested from the bucket through ``crawl.warcs``.

The run is cut as a deployment would cut it when it grows: crawl host groups and site partitions grow with
the x (``--sites-per-partition``), so a task's share stays about the same while the run grows tenfold.
Every stage's tasks are listed as the DAG lists them (``bitextflow.stages.registry.task_inputs``) and each
runs in a fresh Python process (``--workers`` at a time), which prints its peak RSS (VmHWM: the process's
own high-water mark). Per stage it prints the tasks, the items it took in per second of wall time (pages,
documents or pairs, from the stage's counts) and the peak RSS of its largest task, at each size; the goal is
peak RSS at 10x within 1.25x of 1x for every stage. A real SeaweedFS server holds the run.

Usage, from the project root::

    .venv/bin/python bench/scale.py [--json] [--mode web|ingest] [--scales 1,10] [--sites 20] [--warcs 150]
        [--workers 2] [--sites-per-partition 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAIR_CONFIG = ROOT / "include" / "pairs" / "en-es.yaml"
BUCKET = "bitextflow"
RSS_GOAL = 1.25

# What each stage's items are: a stage's counts name what it took in ("in"; the crawl: pages fetched); the
# partition stages without counts are measured by their partitions' summaries, the release by its pairs.
COUNTED_AS = {
    "crawl": "pages",  # WARC files when ingesting
    "extract": "pages",
    "partition": "documents",
    "gate_documents": "documents",
    "deduplicate": "documents",
    "align_documents": "documents",
    "align_sentences": "sentence beads",
    "score": "sentence pairs",
    "classify": "sentence pairs",
    "gate": "sentence pairs",
    "release": "sentence pairs",
}
_COUNTS_STAGE = {"extract": "extract_documents", "deduplicate": "extract_documents_cross_shard"}


def run_task(spec: dict[str, Any]) -> None:
    """In the child: one task of a stage on its inputs, then its outputs and peak RSS as JSON on stdout."""
    from bitextflow.config import load_pair_config
    from bitextflow.stages.registry import REGISTRY, run_context, run_stage
    from bitextflow.storage import ObjectStore

    config = load_pair_config(PAIR_CONFIG).with_overrides(spec["overrides"])
    ctx = run_context(config, ObjectStore.from_env(BUCKET), spec["run_id"])
    outputs = run_stage(ctx, REGISTRY.get(spec["stage"]), spec["inputs"])
    status = Path("/proc/self/status").read_text()
    peak_kib = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))
    print(json.dumps({"outputs": outputs, "peak_rss_kib": peak_kib}, default=str))


def _child(spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--task", json.dumps(spec)],
        capture_output=True, text=True, env=env, timeout=3600,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"{spec['stage']} task failed: {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _items(ctx: Any, stage: str, outputs: list[Any]) -> int:
    """What the stage took in (see :data:`COUNTED_AS`)."""
    from bitextflow.catalog.status import collect_counts

    if stage == "release":
        return int(outputs[0]["sentence_pairs"])
    if stage in ("partition", "gate_documents"):
        summaries = [key for key in ctx.store.list_keys(ctx.key("partitions", "")) if key.endswith(".summary.json")]
        return sum(sum(ctx.store.get_json(key)["documents"].values()) for key in summaries)
    if stage == "crawl" and ctx.config.crawl.warcs:
        return len([key for keys in outputs for key in keys])  # ingesting: the WARC files listed
    name = _COUNTS_STAGE.get(stage, stage)
    for counts in collect_counts(ctx.store, ctx.config.pair, ctx.run_id, (stage,)):
        if counts.stage == name:
            return counts.kept if stage == "crawl" else counts.items_in
    return 0


def run_pipeline_measured(overrides: dict[str, Any], run_id: str, env: dict[str, str], workers: int) -> dict[str, Any]:
    """Every stage of one run, its tasks in child processes; per stage: tasks, items, seconds, largest peak RSS."""
    from bitextflow.config import load_pair_config
    from bitextflow.stages.registry import REGISTRY, as_inputs, run_context, task_inputs
    from bitextflow.storage import ObjectStore

    os.environ.update(env)
    config = load_pair_config(PAIR_CONFIG).with_overrides(overrides)
    ctx = run_context(config, ObjectStore.from_env(BUCKET), run_id)
    figures: dict[str, Any] = {}
    upstream: list[str] = []
    for stage in REGISTRY.run_stages(config):
        started = time.monotonic()
        tasks = task_inputs(ctx, stage, upstream)
        specs = [{"stage": stage.name, "inputs": as_inputs(inputs), "overrides": overrides, "run_id": run_id} for inputs in tasks]
        with ThreadPoolExecutor(max(1, workers)) as pool:
            results = list(pool.map(lambda spec: _child(spec, env), specs))
        seconds = time.monotonic() - started
        outputs = [result["outputs"] for result in results]
        items = _items(ctx, stage.name, outputs)
        upstream = as_inputs(outputs) if stage.name != "release" else []
        figures[stage.name] = {
            "tasks": len(tasks),
            "items": items,
            "counted_as": COUNTED_AS.get(stage.name, "items"),
            "seconds": round(seconds, 1),
            "items_per_s": round(items / seconds, 2) if seconds else 0.0,
            "peak_rss_mb": round(max(result["peak_rss_kib"] for result in results) / 1024, 1),
        }
        print(f"  {stage.name:16} {len(tasks):4} tasks {items:7} {figures[stage.name]['counted_as']:15} "
              f"{seconds:7.1f} s  peak {figures[stage.name]['peak_rss_mb']:7.1f} MB", file=sys.stderr, flush=True)  # fmt: skip
    return figures


def _web_overrides(scale: int, args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], Any, int]:
    """Build and serve the web of ``scale`` x ``--sites`` sites; returns the run's overrides, the servers, the sites."""
    from bitextflow_local.localsite.build import build_site
    from bitextflow_local.localsite.multisite import build_web
    from bitextflow_local.localsite.server import serve_sites

    sites = args.sites * scale
    web = build_web(build_site(full=args.full), work / f"web-{scale}x", sites)
    servers = serve_sites({site.address: site.docroot for site in web.sites})
    overrides = {
        "crawl.seeds": web.seeds(servers.port),
        "crawl.allow_private_addresses": web.allowed_addresses(servers.port),
        "crawl.max_pages": web.pages * 2,
        "crawl.host_groups": _groups(sites, args.sites_per_partition),
    }
    return overrides, servers, sites


def _ingest_overrides(scale: int, args: argparse.Namespace, store: Any) -> dict[str, Any]:
    """Upload ``scale`` x ``--warcs`` small WARC files of ``scale`` x ``--sites`` sites; the run's overrides."""
    from bitextflow_local.localsite.warcs import warc_files

    prefix = f"ingest-{scale}x/"
    for name, data in warc_files(args.warcs * scale, args.sites * scale):
        store.put_bytes(prefix + name, data, "application/warc")
    # the generated web's hosts have no robots.txt to fetch: an offline deployment's setting
    return {"crawl.seeds": [], "crawl.warcs": [prefix], "policy.unknown_robots_on_ingest": "allow"}


def _groups(sites: int, per_group: int) -> int:
    return max(1, -(-sites // per_group))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from bitextflow.storage import ObjectStore, StorageSettings
    from bitextflow_local.services.seaweed import SeaweedServer

    results: dict[str, Any] = {"mode": args.mode, "workers": args.workers, "sites": {}, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="bitextflow-scale-") as tmp, SeaweedServer(Path(tmp) / "s3", [BUCKET]) as s3:
        env = {**os.environ, **s3.env()}
        store = ObjectStore(StorageSettings.from_env(s3.env()), BUCKET)
        for scale in args.scales:
            label = f"{scale}x"
            print(f"{args.mode} at {label}:", file=sys.stderr, flush=True)
            servers = None
            if args.mode == "web":
                overrides, servers, sites = _web_overrides(scale, args, Path(tmp))
            else:
                overrides, sites = _ingest_overrides(scale, args, store), args.sites * scale
            overrides |= {
                "extract.site_partitions": _groups(sites, args.sites_per_partition),
                "extract.max_tasks": 4 * scale,  # a few batches per worker slot, growing with the run
                "crawl.delay_seconds": 0.0,
                "gate.min_sentence_pairs": 1,
                "gate.min_documents": 1,
                "gate.max_volume_drop": None,
                "release.record_in_registry": False,
            }
            try:
                results["runs"][label] = run_pipeline_measured(overrides, f"scale_{args.mode}_{label}", env, args.workers)
            finally:
                if servers is not None:
                    servers.stop()
            results["sites"][label] = sites
    return results


def summary(results: dict[str, Any], scales: list[int]) -> dict[str, Any]:
    """BENCH.md's shape: per stage, tasks, items per second and peak RSS at each size, and the 10x/1x RSS ratio."""
    small, large = (f"{scale}x" for scale in (scales[0], scales[-1]))
    stages: dict[str, Any] = {}
    for stage, first in results["runs"][small].items():
        last = results["runs"][large].get(stage, {})
        stages[stage] = {
            "tasks": {small: first["tasks"], large: last.get("tasks")},
            "items": {small: first["items"], large: last.get("items")},
            "counted_as": first["counted_as"],
            "items_per_s": {small: first["items_per_s"], large: last.get("items_per_s")},
            "peak_rss_mb": {small: first["peak_rss_mb"], large: last.get("peak_rss_mb")},
            "peak_rss_ratio": round(last["peak_rss_mb"] / first["peak_rss_mb"], 3) if last else None,
        }
    worst = max((figures["peak_rss_ratio"] or 0.0) for figures in stages.values())
    return {
        "mode": results["mode"],
        "workers": results["workers"],
        "sites": results["sites"],
        "stages": stages,
        "worst_peak_rss_ratio": worst,
        "goal_peak_rss_ratio": RSS_GOAL,
        "goal_met": worst <= RSS_GOAL,
        "load_average": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object, last")
    parser.add_argument("--mode", choices=("web", "ingest"), default="web")
    parser.add_argument("--scales", default="1,10", help="sizes to run, in x of the base (default 1,10)")
    parser.add_argument("--sites", type=int, default=20, help="sites per x (default 20)")
    parser.add_argument("--warcs", type=int, default=150, help="ingest mode: WARC files per x (default 150)")
    parser.add_argument("--workers", type=int, default=2, help="task processes at a time (default 2)")
    parser.add_argument("--sites-per-partition", type=int, default=5, help="sites per partition and per crawl host group")
    parser.add_argument("--full", action="store_true", help="deal the sites from the full 21-language local site")
    parser.add_argument("--task", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        run_task(json.loads(args.task))
        return 0
    args.scales = [int(value) for value in args.scales.split(",")]
    figures = summary(measure(args), args.scales)
    if not args.json:
        for stage, row in figures["stages"].items():
            print(f"{stage:16} tasks {row['tasks']}  {row['counted_as']}/s {row['items_per_s']}  peak RSS MB {row['peak_rss_mb']}  "
                  f"ratio {row['peak_rss_ratio']}")  # fmt: skip
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
