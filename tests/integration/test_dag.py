"""Real Airflow DAG runs (dag.test()) against SeaweedFS and the local site, and DAG parsing errors.

The tests of this module against real services; those that need none are tests/unit/test_dag.py's.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bitextflow import cli
from bitextflow.catalog.releases import list_releases, read_release_pairs, read_release_records
from bitextflow.score.margin import E5_SMALL_CALIBRATIONS
from tests.support import ROOT
from tests.unit.test_dag import DAG_ID, dagbag


@pytest.fixture
def en_es_dag(airflow_db):
    return dagbag(ROOT / "dags").dags[DAG_ID]


def test_dag_run_end_to_end_publishes_a_precise_release(en_es_dag, s3_env, store, site, truth):
    before = {info.version for info in list_releases(store, "en-es")}
    # the shipped config at 60 pages: some 3,400 pairs, every stage and file of a release (`make demo` runs the site)
    run = en_es_dag.test(run_conf={"overrides": {"crawl.seeds": [site.base_url], "crawl.max_pages": 60}})
    assert run.state == "success"

    (release,) = [info for info in list_releases(store, "en-es") if info.version not in before]
    assert release.run_id == run.run_id
    assert release.uri == f"s3://bitextflow/releases/en-es/v{release.version}/"
    assert release.sentence_pairs >= 500
    pairs = read_release_pairs(store, release)
    assert len(pairs) == release.sentence_pairs
    precision = truth.translation_precision(zip(pairs["url_a"], pairs["url_b"], strict=True))
    print(f"released {release.sentence_pairs} pairs, translation precision {precision:.3f}")
    assert precision >= 0.9
    # the shipped config's best path: every pair scored by the margin scorer and classified on both sides
    records = read_release_records(store, release)
    # kept at or above the threshold of the runtime that embedded them (int8 or torch, by the CPU)
    lowest_threshold = min(calibration.threshold for calibration in E5_SMALL_CALIBRATIONS.values())
    assert len(records) == release.sentence_pairs and records["margin_score"].between(lowest_threshold, 1).all()
    distributions = [json.loads(probs) for probs in [*records["domain_probs_a"], *records["domain_probs_b"]]]
    assert all(set(d) == {"computing", "religion", "legal", "Other"} and abs(sum(d.values()) - 1) < 1e-3 for d in distributions)
    assert_visible_in_the_ui(run, release.version)

    listed = subprocess.run(
        [str(Path(sys.executable).parent / "bitextflow"), "releases", "list", "--pair", "en-es", "--json"],
        capture_output=True, text=True, check=True, env={**os.environ, **s3_env},
    )  # fmt: skip
    entries = json.loads(listed.stdout)
    assert {"version", "uri", "sentence_pairs", "created"} <= set(entries[-1])
    assert entries[-1]["version"] == release.version

    # issue 7 acceptance: every release file, counts consistent across formats, the DVC tag retrievable
    checked = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "release_check.py"), "--pair", "en-es", "--json"],
        capture_output=True, text=True, env={**os.environ, **s3_env},
    )  # fmt: skip
    print(checked.stdout, checked.stderr[-2000:])
    result = json.loads(checked.stdout.strip().splitlines()[-1])
    assert checked.returncode == 0 and result["ok"], result
    assert result["version"] == release.version and result["counts"]["tmx"] == release.sentence_pairs
    assert {"report.html", "datasheet.md", "en-es.jsonl", "document_pairs.jsonl", "mono.en.txt", "mono.es.txt"} <= set(
        result["files"]
    )


def assert_visible_in_the_ui(run, version: int) -> None:
    """Counts in each task's XCom, a Data Docs link on each gate, asset events for downstream DAGs."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        xcoms = session.query(XComModel.task_id, XComModel.key).filter(XComModel.run_id == run.run_id).all()
        events = (
            session.query(AssetModel.name, AssetEvent.extra)
            .join(AssetEvent, AssetEvent.asset_id == AssetModel.id)
            .filter(AssetEvent.source_run_id == run.run_id)
            .all()
        )
    keys = {(task_id, key) for task_id, key in xcoms}
    for task_id in ("crawl", "extract", "align_documents", "align_sentences", "score", "classify_outputs", "monolingual", "gate"):
        assert any(t == task_id and k.startswith("counts.") for t, k in keys), f"no counts XCom on {task_id}"
    assert {(gate, "_link_DataDocsLink") for gate in ("gate_documents", "gate", "release")} <= keys
    names = {name: extra for name, extra in events}
    assert set(names) == {f"bitextflow.en-es.{s}" for s in ("documents", "document_pairs", "sentence_pairs", "release")}
    assert names["bitextflow.en-es.release"]["written"]["version"] == version


def test_failing_gate_fails_the_run_and_publishes_nothing(en_es_dag, s3_env, store, site):
    before = list_releases(store, "en-es")
    overrides = {"crawl.seeds": [site.base_url], "crawl.max_pages": 60, "gate.min_sentence_pairs": 10**9}
    run = en_es_dag.test(run_conf={"overrides": overrides})
    assert run.state == "failed"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["gate"] == "failed" and states["release"] == "upstream_failed"
    assert list_releases(store, "en-es") == before


def test_a_second_pair_is_a_yaml_file_and_a_run(airflow_db, s3_env, store, site, truth, capsys):
    """en-fr: its DAG comes from include/pairs/en-fr.yaml alone; a short crawl publishes and records a release."""
    dag = dagbag(ROOT / "dags").dags["bitextflow__en_fr"]
    overrides = {"crawl.seeds": [site.base_url], "crawl.max_pages": 60, "gate.min_sentence_pairs": 20}
    run = dag.test(run_conf={"overrides": overrides})
    assert run.state == "success"
    (release,) = [info for info in list_releases(store, "en-fr") if info.run_id == run.run_id]
    pairs = read_release_pairs(store, release)
    print(f"en-fr: released {len(pairs)} pairs")
    assert len(pairs) >= 20 and truth.translation_precision(zip(pairs["url_a"], pairs["url_b"], strict=True)) >= 0.9
    assert all("/fr/" in url or ".fr." in url for url in pairs["url_b"])

    capsys.readouterr()
    assert cli.main(["status", "--json"]) == 0  # in-process: a `bitextflow` subprocess spends seconds importing
    by_pair = {entry["pair"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert by_pair["en-fr"]["last_release"]["version"] == release.version
    assert by_pair["en-fr"]["last_release"]["registry_tag"] == f"bitextflow/en-fr-v{release.version}"
    last_run = by_pair["en-fr"]["last_run"]
    assert last_run["run_id"] == run.run_id and last_run["failed_gates"] == []
    assert last_run["released_as"] == release.version, "the run that published a release says so"
