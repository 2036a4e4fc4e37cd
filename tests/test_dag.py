"""Real Airflow DAG runs (dag.test()) against SeaweedFS and the local site, and DAG parsing errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bitextflow.release import list_releases
from bitextflow.release.publish import read_release_pairs

pytestmark = pytest.mark.dag
ROOT = Path(__file__).resolve().parents[1]
DAG_ID = "bitextflow__en_es"


def dagbag(dag_folder: Path):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(dag_folder))


def test_factory_makes_one_dag_per_pair_with_stages_in_order():
    bag = dagbag(ROOT / "dags")
    assert not bag.import_errors
    dag = bag.dags[DAG_ID]
    order = ["crawl", "extract", "align_documents", "align_sentences", "score", "classify", "gate", "release"]
    assert [t.task_id for t in dag.topological_sort()] == order
    for upstream, downstream in zip(order, order[1:], strict=False):
        assert downstream in dag.get_task(upstream).downstream_task_ids
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    mapped = {t.task_id for t in dag.tasks if isinstance(t, MappedOperator)}
    assert mapped == {"extract", "align_sentences", "score", "classify"}


def test_invalid_pair_config_stops_parsing_with_one_line(tmp_path, monkeypatch):
    data = yaml.safe_load((ROOT / "include" / "pairs" / "en-es.yaml").read_text())
    data["crawl"]["max_pages"] = "lots"
    (tmp_path / "en-es.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("BITEXTFLOW_PAIRS_DIR", str(tmp_path))
    bag = dagbag(ROOT / "dags")
    assert not bag.dags
    (error,) = bag.import_errors.values()
    (line,) = error.strip().splitlines()  # tracebacks are off in our Airflow config: the UI shows one line
    assert f"{tmp_path / 'en-es.yaml'}: field crawl.max_pages: Input should be a valid integer" in line


@pytest.fixture
def en_es_dag(airflow_db):
    return dagbag(ROOT / "dags").dags[DAG_ID]


def test_dag_run_end_to_end_publishes_a_precise_release(en_es_dag, s3_env, store, site, truth):
    before = {info.version for info in list_releases(store, "en-es")}
    run = en_es_dag.test(run_conf={"overrides": {"crawl.seeds": [site.base_url]}})
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

    listed = subprocess.run(
        [str(Path(sys.executable).parent / "bitextflow"), "releases", "list", "--pair", "en-es", "--json"],
        capture_output=True, text=True, check=True, env={**os.environ, **s3_env},
    )  # fmt: skip
    entries = json.loads(listed.stdout)
    assert {"version", "uri", "sentence_pairs", "created"} <= set(entries[-1])
    assert entries[-1]["version"] == release.version


def test_failing_gate_fails_the_run_and_publishes_nothing(en_es_dag, s3_env, store, site):
    before = list_releases(store, "en-es")
    overrides = {"crawl.seeds": [site.base_url], "crawl.max_pages": 60, "gate.min_sentence_pairs": 10**9}
    run = en_es_dag.test(run_conf={"overrides": overrides})
    assert run.state == "failed"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["gate"] == "failed" and states["release"] == "upstream_failed"
    assert list_releases(store, "en-es") == before
