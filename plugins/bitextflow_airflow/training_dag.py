"""The domain-classifier training DAG of a pair: ``bitextflow__<src>_<tgt>__train_domain``.

Made by the DAG factory only for pairs whose config has ``domain.training``. Its one task runs the
``bitextflow train-domain`` step through :func:`~bitextflow_airflow.dispatch.gpu_step`, so it trains in the
worker or in a GPU pod as ``gpu.mode`` says, and publishes ``models/<pair>/domain/v<N>/``; pair runs
pick the newest with ``domain.classifier: latest`` (docs/classify.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from airflow.sdk import DAG, Param

from bitextflow.config import PairConfig
from bitextflow_airflow.dispatch import gpu_step

DOC_MD = """
### bitextflow: train the {pair} domain classifier
Trains a `{kind}` classifier as `domain.training` of `{path}` says, writes its evaluation report and
publishes it under `models/{pair}/domain/v<N>/`. Override options for one run with the `overrides`
param, e.g. `{{"domain.training.kind": "svm"}}`.
"""


def training_dag_id(config: PairConfig) -> str:
    return f"{config.dag_id}__train_domain"


def build_domain_training_dag(config: PairConfig, config_path: Path) -> DAG:
    training = config.domain.training
    with DAG(
        dag_id=training_dag_id(config),
        description=f"train the {config.pair} domain classifier",
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,  # two runs would both publish as the same next version
        tags=["bitextflow", config.pair, "training"],
        params={"overrides": Param({}, type="object", description="section.field -> value, for this run only")},
        doc_md=DOC_MD.format(pair=config.pair, kind=training.kind if training else "transformer", path=config_path.name),
    ) as dag:
        # a failed training is rarely transient (bad data, no memory): retries would only repeat it
        gpu_step("train_domain", config, retries=0, execution_timeout=timedelta(hours=12))
    return dag
