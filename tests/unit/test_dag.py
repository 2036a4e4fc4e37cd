"""Real Airflow DAG runs (dag.test()) against SeaweedFS and the local site, and DAG parsing errors.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_dag.py's.
"""

from pathlib import Path

import yaml

from tests.support import ROOT

DAG_ID = "bitextflow__en_es"


def dagbag(dag_folder: Path):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(dag_folder))


def test_factory_makes_one_dag_per_pair_with_stages_in_order():
    bag = dagbag(ROOT / "dags")
    assert not bag.import_errors
    dag = bag.dags[DAG_ID]
    order = [
        "crawl_plan", "crawl", "extract_plan", "extract", "partition_plan", "partition", "gate_documents", "deduplicate",
        "align_documents", "embed", "align_sentences", "score", "classify", "classify_outputs", "monolingual_plan",
        "monolingual", "gate", "release",
    ]  # fmt: skip
    assert [t.task_id for t in dag.topological_sort()] == order
    for upstream, downstream in zip(order, order[1:], strict=False):
        assert downstream in dag.get_task(upstream).downstream_task_ids
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    mapped = {t.task_id for t in dag.tasks if isinstance(t, MappedOperator)}
    assert mapped == {
        "crawl",
        "extract",
        "partition",
        "align_documents",
        "embed",
        "align_sentences",
        "score",
        "classify_outputs",
        "monolingual",
    }, (
        "crawl maps over host groups, extract over batches of WARC files, the rest over site partitions; with a domain "
        "classifier, classify is one step (its model loads once) whose outputs map over the partitions"
    )


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


def test_a_pair_with_a_schedule_can_be_backfilled():
    """en-fr's `schedule: "@weekly"` gives a periodic timetable, which `airflow backfill create` requires
    (it refuses schedule-less DAGs with DagNonPeriodicScheduleException)."""
    from airflow.serialization.serialized_objects import DagSerialization

    bag = dagbag(ROOT / "dags")
    # the backfill reads the serialized DAG, as the scheduler does
    en_fr, en_es = (DagSerialization.from_dict(DagSerialization.to_dict(bag.dags[d])) for d in ("bitextflow__en_fr", DAG_ID))
    assert en_fr.timetable.periodic and not en_es.timetable.periodic
    assert not bag.dags["bitextflow__en_fr"].catchup  # past intervals run only when backfilled
