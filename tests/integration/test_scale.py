"""Runs over many shards stay within Airflow's limits: the extract stage maps over batches of WARC files.

The tests of this module against real services; those that need none are tests/unit/test_scale.py's.
"""

from __future__ import annotations

import textwrap

from bitextflow.config import load_pair_config
from bitextflow.stages.registry import run_context
from bitextflow_local.localsite.warcs import warc_files
from tests.support import ROOT

# Ten times Airflow's max_map_length here, as 1,500 files were at its default of 64 (the 1,500-file and 50,000-file
# sizes are bench/scale.py's): the behaviour, many files mapped into few tasks with nothing lost, is the same.
WARC_FILES = 160
MAX_MAP_LENGTH = 16
EXTRACT_TASKS = 4
DAG_FILE = """
from pathlib import Path

from bitextflow.config import load_pair_config
from bitextflow.stages.crawl import Crawl
from bitextflow.stages.extract import Extract
from bitextflow.stages.gate_documents import GateDocuments
from bitextflow.stages.partition import Partition
from bitextflow.stages.registry import StageRegistry
from bitextflow_airflow.pair_dag import build_pair_dag

CONFIG = load_pair_config({config!r}).with_overrides({overrides!r})
dag = build_pair_dag(CONFIG, Path({config!r}), StageRegistry((Crawl, Extract, Partition, GateDocuments)))
"""


def test_a_run_over_ten_times_max_map_length_warc_files_maps_into_few_extract_tasks(
    dag_folder, s3_env, store, monkeypatch
) -> None:
    """160 WARC files, Airflow's max_map_length at 16: the extract stage runs as 4 tasks and loses nothing."""
    from airflow.dag_processing.dagbag import DagBag

    prefix = "scale-warcs/"
    for name, data in warc_files(WARC_FILES):
        store.put_bytes(prefix + name, data, "application/warc")

    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", str(MAX_MAP_LENGTH))
    # the generated web's hosts have no robots.txt to fetch
    overrides = {
        "crawl.seeds": [],
        "crawl.warcs": [prefix],
        "extract.max_tasks": EXTRACT_TASKS,
        "policy.unknown_robots_on_ingest": "allow",
    }
    config_path = str(ROOT / "include" / "pairs" / "en-es.yaml")
    (dag_folder / "scale_dag.py").write_text(textwrap.dedent(DAG_FILE.format(config=config_path, overrides=overrides)))
    bag = DagBag(dag_folder=str(dag_folder))
    assert not bag.import_errors, bag.import_errors
    run = bag.dags["bitextflow__en_es"].test()
    assert run.state == "success"

    extract_tasks = [ti for ti in run.get_task_instances() if ti.task_id == "extract"]
    assert len(extract_tasks) == EXTRACT_TASKS and all(ti.state == "success" for ti in extract_tasks)
    ctx = run_context(load_pair_config(config_path), store, run.run_id)
    counts = [store.get_json(key) for key in store.list_keys(ctx.key("extract", "")) if key.endswith(".documents.counts.json")]
    assert len(counts) == WARC_FILES, "every WARC file is its own shard, written once"
    assert sum(c["in"] for c in counts) == WARC_FILES and sum(c["kept"] for c in counts) == WARC_FILES
    report = store.get_json(ctx.key("gate", "documents.report.json"))
    assert report["success"] is True


def _groups_apart(hosts: list[str]) -> int:
    """The smallest number of host groups that puts each of ``hosts`` in its own group."""
    from bitextflow.crawl.urls import host_group

    return next(n for n in range(len(hosts), 64) if len({host_group(host, n) for host in hosts}) == len(hosts))


def test_the_crawl_maps_over_host_groups_each_with_its_own_frontier_checkpoints_and_warcs(site, store) -> None:
    """Two hosts (the local site by address and by name) in two groups: two crawl tasks, each fetching its own
    host only, writing its own WARC files, crawl log and counts; extract reads them all."""
    from bitextflow.catalog.checkpoints import crawl_log
    from bitextflow.crawl.urls import host_of
    from bitextflow.stages.crawl import Crawl
    from bitextflow.stages.registry import REGISTRY

    port = site.base_url.rsplit(":", 1)[1].strip("/")
    seeds = [f"http://127.0.0.1:{port}/", f"http://localhost:{port}/"]
    groups = _groups_apart([host_of(seed) for seed in seeds])
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {
            "crawl.seeds": seeds,
            "crawl.host_groups": groups,
            "crawl.max_pages": 40,
            "crawl.allow_private_addresses": ["127.0.0.1", "::1"],
        }
    )
    planned = Crawl.first_inputs(config)
    assert len(planned) == 2 and all(name.startswith("hosts-") for name in planned)
    ctx = run_context(config, store, "test_crawl_host_groups")
    keys = REGISTRY.run(ctx, "crawl", planned)
    assert {key.rsplit("/", 1)[1].rsplit("-", 1)[0] for key in keys} == {f"crawl-{group}" for group in planned}
    for group in planned:
        assert store.exists(ctx.key("crawl", f"{group}/checkpoint.json.gz"))
    fetched = [line for line in crawl_log(store, config.pair, ctx.run_id) if line["outcome"] == "fetched"]
    assert {host_of(line["url"]) for line in fetched} == {host_of(seed) for seed in seeds}
    assert len(fetched) == 40, "max_pages is shared among the groups by their seeds"
    documents = REGISTRY.run(ctx, "extract", keys)
    assert len(documents) == len(keys)
