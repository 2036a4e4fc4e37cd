"""The score stage with bicleaner: three mapped tasks per shard instead of one (docs/score.md).

``score_rules[shard]`` (worker: our hard rules, the bicleaner input TSV to S3, presigned URLs)
-> ``bicleaner[shard]`` (``envscripts/score_pairs.py`` in the bicleaner environment: locally through
``@task.external_python`` with ``.venv-bicleaner/bin/python``; with ``gpu.mode: kubernetes`` a
``KubernetesPodOperator`` in ``score.bicleaner_image``, built from docker/bicleaner.Dockerfile)
-> ``score[shard]`` (worker: threshold, counts, the scored shard). The middle task runs the same
script with the same arguments in both places; only the interpreter and the model folder's path differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bitextflow import pipeline
from bitextflow.config import PairConfig
from bitextflow.errors import ConfigError
from bitextflow.score import bicleaner

# Where docker/bicleaner.Dockerfile puts the scoring script and the pair's model.
POD_PYTHON = "python"
POD_SCRIPT = "/opt/bitextflow/score_pairs.py"
POD_MODEL_DIR = "/opt/bitextflow/model"


def score_pairs_in_env(script: str, job: dict) -> None:
    """Runs INSIDE the bicleaner environment (external_python ships this function's source, not the module)."""
    import runpy

    status = runpy.run_path(script, run_name="bitextflow_score_pairs")["main"](job["arguments"])
    if status:
        raise RuntimeError(f"{script} exited with status {status} for shard {job['shard']}")


def scored_shards(
    config: PairConfig, sentence_pairs: Any, make_context: Callable[[PairConfig, dict], pipeline.RunContext]
) -> Any:
    """Add the three tasks for the mapped ``sentence_pairs`` keys; returns the scored keys (an XComArg)."""
    from airflow.sdk import task

    on_kubernetes = config.gpu.mode == "kubernetes"
    if on_kubernetes and not config.score.bicleaner_image:
        raise ConfigError(f"{config.pair}: score.bicleaner_image is empty; build docker/bicleaner.Dockerfile and set it")

    @task(max_active_tis_per_dagrun=4)
    def score_rules(sentence_pairs_key: str, **context: Any) -> dict[str, Any]:
        model_dir = POD_MODEL_DIR if on_kubernetes else None
        return pipeline.prepare_score(make_context(config, context), sentence_pairs_key, model_dir=model_dir)

    @task(max_active_tis_per_dagrun=4)
    def score(job: dict[str, Any], **context: Any) -> str:
        return pipeline.finish_score(make_context(config, context), job)

    jobs = score_rules.expand(sentence_pairs_key=sentence_pairs)
    if on_kubernetes:
        step = _pod(config).expand(arguments=jobs.map(_arguments))
    else:
        in_env = task.external_python(
            task_id="bicleaner", python=str(bicleaner.bicleaner_python()), expect_airflow=False, max_active_tis_per_dagrun=2
        )(score_pairs_in_env)
        step = in_env.partial(script=str(bicleaner.SCORE_SCRIPT)).expand(job=jobs)
    scored = score.expand(job=jobs)
    step >> scored
    return scored


def _arguments(job: dict[str, Any]) -> list[str]:
    return job["arguments"]


def _pod(config: PairConfig) -> Any:
    """The pod of the bicleaner step: the dispatch's placement and S3-free environment, CPU only, its own image."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

    from bitextflow_airflow.dispatch import pod_placement

    gpu = config.gpu
    return KubernetesPodOperator.partial(
        task_id="bicleaner",
        name=f"bitextflow-{config.pair}-bicleaner",
        namespace=gpu.namespace,
        image=config.score.bicleaner_image,
        cmds=[POD_PYTHON, POD_SCRIPT],
        labels={"app.kubernetes.io/name": "bitextflow", "bitextflow/pair": config.pair, "bitextflow/stage": "bicleaner"},
        **pod_placement(gpu),
        get_logs=True,
        on_finish_action="delete_succeeded_pod",
        max_active_tis_per_dagrun=4,
    )
