"""Reliability: reruns write the same bytes, an S3 outage mid-run loses nothing, credentials stay secret.

These run the real pipeline on the local site against real SeaweedFS servers; the outage test stops
its own server for 60 s in the middle of a real Airflow DAG run (dag.test()).
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest

from bitextflow.catalog.releases import list_releases
from bitextflow.catalog.status import collect_counts
from bitextflow.config import load_pair_config
from bitextflow.stages.base import RunContext
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.layout import run_prefix
from bitextflow_local.services.seaweed import SeaweedServer
from tests.support import BUCKET, ROOT

#: how long the S3 server is down: the DAG's retries (15, 30 and 60 s at least) ride out an outage of this length
OUTAGE_S = 60
SMALL_RUN = {"crawl.max_pages": 60, "gate.min_sentence_pairs": 1, "gate.max_volume_drop": None}


def snapshot(store: ObjectStore, *prefixes: str) -> dict[str, str]:
    return {key: hashlib.sha256(store.get_bytes(key)).hexdigest() for prefix in prefixes for key in store.list_keys(prefix)}


def run_all_stages(ctx: RunContext) -> object:
    return run_pipeline(ctx)["release"]


def test_every_stage_rerun_writes_the_same_keys_and_bytes(store, site) -> None:
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {**SMALL_RUN, "crawl.seeds": [site.base_url]}
    )
    ctx = run_context(config, store, "test_rerun_idempotent")
    first_release = run_all_stages(ctx)
    prefixes = (run_prefix(config.pair, ctx.run_id), f"releases/{config.pair}/")
    before = snapshot(store, *prefixes)
    second_release = run_all_stages(ctx)  # every task retried after it succeeded
    after = snapshot(store, *prefixes)
    # Only the registry's "recorded now" flag may differ: the retried task found its tag already there.
    assert {**second_release, "registry": None} == {**first_release, "registry": None}
    assert set(after) == set(before), "a rerun wrote new keys or lost some"
    changed = sorted(key for key in before if before[key] != after[key])
    assert not changed, f"rerun rewrote {len(changed)} objects with other bytes, e.g. {changed[:5]}"


@pytest.fixture
def outage_server(tmp_path, monkeypatch) -> SeaweedServer:
    """A server of the test's own, so stopping it leaves the other tests' store alone; and its own DVC registry,
    since its releases share the other tests' bucket name (the registry would refuse their tags as a clash)."""
    monkeypatch.setenv("BITEXTFLOW_REGISTRY", str(tmp_path / "registry"))
    with SeaweedServer(tmp_path / "s3", buckets=[BUCKET]) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        yield server


def test_s3_outage_of_60_seconds_mid_run_loses_nothing(outage_server, airflow_db, site, capfd) -> None:
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(ROOT / "dags")).dags["bitextflow__en_es"]
    store = ObjectStore(StorageSettings.from_env(outage_server.env()), BUCKET)
    client = outage_server.client()
    outage: dict[str, float] = {}

    def stop_once_extract_wrote() -> None:
        while not outage.get("run ended"):  # the run may end first: the assertion below says so
            listed = client.list_objects_v2(Bucket=BUCKET, Prefix="en-es/").get("Contents", [])
            if any("/extract/" in item["Key"] for item in listed):
                outage["stopped"] = time.monotonic()
                outage_server.stop()
                time.sleep(OUTAGE_S)  # the outage's length is what the test is about, not a wait
                outage_server.restart()
                outage["restarted"] = time.monotonic()
                return
            time.sleep(0.2)

    saboteur = threading.Thread(target=stop_once_extract_wrote, daemon=True)
    saboteur.start()
    run = dag.test(run_conf={"overrides": {**SMALL_RUN, "crawl.seeds": [site.base_url]}})
    outage["run ended"] = time.monotonic()
    saboteur.join()
    assert outage.get("restarted"), "the S3 server was never stopped: the run ended before extract wrote anything"
    assert run.state == "success"
    retried = sorted(ti.task_id for ti in run.get_task_instances() if ti.try_number > 1)
    assert retried, "no task met the outage"

    (release,) = list_releases(store, "en-es")
    assert release.run_id == run.run_id and release.sentence_pairs > 0
    ctx = run_context(dag_config(), store, run.run_id)
    counts = {c.stage: c for c in collect_counts(ctx.store, ctx.config.pair, ctx.run_id, REGISTRY.names())}
    print({stage: (c.items_in, c.kept) for stage, c in counts.items()})
    # Nothing lost between stages: every kept pair of every shard reached the gate.
    assert counts["gate"].items_in == counts["classify"].kept

    secrets = (outage_server.secret_access_key, outage_server.access_key_id)
    logs = capfd.readouterr()
    texts = [logs.out, logs.err, *(p.read_text(errors="replace") for p in Path(airflow_db, "logs").rglob("*") if p.is_file())]
    objects = [
        store.get_bytes(key).decode("utf-8", "replace") for key in store.list_keys("") if not key.endswith((".gz", ".parquet"))
    ]
    for secret in secrets:
        assert not any(secret in text for text in texts), "a credential appeared in the logs"
        assert not any(secret in text for text in objects), "a credential appeared in a stored report"


def dag_config():
    return load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
