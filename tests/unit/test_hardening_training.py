"""Whoever may trigger the training DAG cannot choose what the domain classifier learns from, and a trained model records
who trained it and what the run changed (docs/security.md). A small SVM, trained for real; no object store."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bitextflow.classify.data import LabelledSentence, write_labelled
from bitextflow.classify.model import METADATA_FILENAME
from bitextflow.config import load_pair_config
from bitextflow.errors import ConfigError
from tests.support import ROOT

CONFIG = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides({"domain.training": {"kind": "svm"}})
WORDS = {
    "computing": "kernel package install compile server network",
    "religion": "prayer gospel church faith psalm temple",
    "legal": "court contract statute clause tribunal plaintiff",
    "Other": "weather football recipe holiday garden music",
}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("domain.training.crawl_runs", ["manual__my_labelled_crawl"]),
        ("domain.training.site_labels", {"http://mallory.example/": "computing"}),
        ("domain.training.other_sites", ["http://docs.example/"]),
        ("domain.training.labels", ["computing", "Other"]),
        ("domain.training", {"kind": "svm", "site_labels": {"http://mallory.example/": "computing"}}),
    ],
)
def test_a_run_cannot_choose_the_training_data_or_labels(option, value) -> None:
    with pytest.raises(ConfigError, match=rf"^override '{option}': only the pair's YAML may set this"):
        CONFIG.with_run_overrides({option: value})


def test_a_run_still_tunes_the_training() -> None:
    tuned = CONFIG.with_run_overrides({"domain.training.kind": "probe", "domain.training.max_steps": 50})
    assert (tuned.domain.training.kind, tuned.domain.training.max_steps) == ("probe", 50)


def test_a_trained_model_records_who_trained_it_and_what_the_run_changed(tmp_path, monkeypatch) -> None:
    from bitextflow.cli import main

    sentences = [
        LabelledSentence(f"{WORDS[label]} sentence {i} of site {site}", label, f"{label}-{site}", "en")
        for label in WORDS
        for site in range(6)
        for i in range(6)
    ]
    data = write_labelled(tmp_path / "labelled.jsonl", sentences)
    monkeypatch.setenv("USER", "operator-ann")
    out = tmp_path / "model"
    training = json.dumps({"kind": "svm", "data": str(data), "min_count": 1})
    argv = ["train-domain", "--pair", "en-es", "--run-id", "cli__hardening", "--set", f"domain.training={training}",
            "--overrides", '{"crawl.max_pages": 10}', "--out", str(out), "--no-publish"]  # fmt: skip
    assert main(argv) == 0
    metadata = json.loads((out / METADATA_FILENAME).read_text())
    assert metadata["run_id"] == "cli__hardening" and metadata["data"] == str(data)
    assert metadata["requested_by"] == {
        "via": "cli", "user": "operator-ann", "overrides": {"crawl.max_pages": 10}, "set": ["domain.training"],
    }  # fmt: skip


def test_the_airflow_glue_names_the_user_who_triggered_the_run() -> None:
    from airflow.sdk.api.datamodels._generated import DagRun

    from bitextflow_airflow.dispatch import run_provenance

    dag_run = DagRun(
        dag_id="bitextflow__en_es__train_domain", run_id="manual__1", logical_date=None, data_interval_start=None,
        data_interval_end=None, run_after=datetime.now(UTC), start_date=None, end_date=None, run_type="manual",
        state="running", triggering_user_name="mallory", consumed_asset_events=[], partition_key=None,
    )  # fmt: skip
    context = {"dag_run": dag_run, "params": {"overrides": {"domain.training.kind": "svm"}}}
    assert run_provenance(context) == {
        "via": "airflow", "user": "mallory", "run_type": "manual", "dag_id": "bitextflow__en_es__train_domain",
        "overrides": {"domain.training.kind": "svm"},
    }  # fmt: skip
