"""A run that cannot succeed is not retried: every task of a pair's DAG (and of its training DAG) fails a configuration
error at once with Airflow's AirflowFailException, which skips the task's retries (docs/security.md). Built DAGs, no
Airflow database: each task's callable is called as the worker would call it."""

from __future__ import annotations

import inspect

import pytest
from airflow.sdk.exceptions import AirflowFailException

from bitextflow.config import load_pair_config
from bitextflow.errors import ConfigError
from tests.support import ROOT

CONFIG = ROOT / "include" / "pairs" / "en-es.yaml"
FORBIDDEN = {"storage.bucket": "somebody-elses-bucket"}


def _callables():
    from bitextflow.stages.registry import REGISTRY
    from bitextflow_airflow.pair_dag import build_pair_dag
    from bitextflow_airflow.training_dag import build_model_step_dag

    config = load_pair_config(CONFIG).with_overrides({"domain.training": {"kind": "probe"}})
    dags = [
        build_pair_dag(config, CONFIG),
        *(build_model_step_dag(config, CONFIG, step) for step in REGISTRY.model_steps(config)),
    ]
    for dag in dags:
        for task in dag.tasks:
            function = getattr(task, "python_callable", None) or task.partial_kwargs.get("python_callable")
            if function is not None:
                yield f"{dag.dag_id}.{task.task_id}", function


def test_every_task_fails_a_configuration_error_at_once() -> None:
    called = []
    for name, function in _callables():
        context = {"params": {"overrides": FORBIDDEN}, "run_id": "manual__retry", "ti": None}
        if "inputs" in inspect.signature(function).parameters:
            context["inputs"] = ["en-es/manual__retry/extract/x.documents.parquet"]
        with pytest.raises(AirflowFailException, match=r"^override 'storage.bucket': only the pair's YAML may set this"):
            function(**context)
        called.append(name)
    assert {"bitextflow__en_es.crawl_plan", "bitextflow__en_es.extract", "bitextflow__en_es.classify"} <= set(called)
    assert "bitextflow__en_es.release" in called and "bitextflow__en_es__train_domain.train_domain" in called


def test_the_failure_keeps_the_one_line_message_of_the_configuration_error() -> None:
    from bitextflow_airflow.failures import failing_at_once

    def task() -> None:
        raise ConfigError("override 'crawl.max_pages': field crawl.max_pages: Input should be less than or equal to 1000000")

    with pytest.raises(AirflowFailException) as failure:
        failing_at_once(task)()
    assert (
        str(failure.value) == "override 'crawl.max_pages': field crawl.max_pages: Input should be less than or equal to 1000000"
    )
    assert failure.value.__cause__ is None
