"""A DAG per model step of a pair: ``bitextflow__<src>_<tgt>__<step>`` (e.g. ``..__train_domain``).

Made by the DAG factory for the registry's model steps that a pair's config enables (``train_domain``
with ``domain.training``). Its one task runs the step through :func:`~bitextflow_airflow.dispatch.gpu_step`,
so it trains in the worker or in a GPU pod as ``gpu.mode`` says, and publishes the model as a new
version; pair runs pick the newest with ``latest`` (docs/classify.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from airflow.sdk import DAG, Param

from bitextflow.config import PairConfig
from bitextflow.stages.base import Stage
from bitextflow_airflow.dispatch import gpu_step

DOC_MD = """
### bitextflow: {help} ({pair})
Runs `bitextflow {command} --pair {pair}` with the options of `{path}`. Override options for one run
with the `overrides` param, e.g. `{{"domain.training.kind": "svm"}}`.
"""


def model_step_dag_id(config: PairConfig, step: type[Stage]) -> str:
    return f"{config.dag_id}__{step.name}"


def build_model_step_dag(config: PairConfig, config_path: Path, step: type[Stage]) -> DAG:
    with DAG(
        dag_id=model_step_dag_id(config, step),
        description=f"{step.help} ({config.pair})",
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,  # two runs would both publish as the same next version
        tags=["bitextflow", config.pair, "training"],
        params={"overrides": Param({}, type="object", description="section.field -> value, for this run only")},
        doc_md=DOC_MD.format(pair=config.pair, help=step.help, command=step.name.replace("_", "-"), path=config_path.name),
    ) as dag:
        # a failed training is rarely transient (bad data, no memory): retries would only repeat it
        gpu_step(step.name, config, retries=0, execution_timeout=timedelta(hours=12))
    return dag
