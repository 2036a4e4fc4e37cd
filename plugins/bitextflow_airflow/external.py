"""A stage with an external step (bicleaner-ai's environment): three mapped tasks per shard instead of one.

``<prepare_task_id>[shard]`` (worker: :meth:`Stage.prepare`, e.g. our hard rules and the bicleaner input
in S3) -> ``<task_id>[shard]`` (the step's script in its own environment: locally through
``@task.external_python`` with its interpreter; with ``gpu.mode: kubernetes`` a ``KubernetesPodOperator``
in its image) -> ``<stage>[shard]`` (worker: :meth:`Stage.finish`). The middle task runs the same
script with the same arguments in both places; only the interpreter and the model folder's path differ.
A job without ``arguments`` (nothing to score) passes the middle task untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk import task

from bitextflow.config import PairConfig
from bitextflow.errors import ConfigError
from bitextflow.stages.base import ExternalStep, RunContext, Stage
from bitextflow_airflow.dispatch import pod_placement


def run_script_in_env(script: str, job: dict) -> None:
    """Runs INSIDE the other environment (external_python ships this function's source, not the module)."""
    import runpy

    if "arguments" not in job:
        return
    status = runpy.run_path(script, run_name="bitextflow_external_step")["main"](job["arguments"])
    if status:
        raise RuntimeError(f"{script} exited with status {status} for shard {job['shard']}")


def external_step_tasks(
    stage: type[Stage], step: ExternalStep, config: PairConfig, upstream: Any, make_context: Callable[[dict], RunContext]
) -> Any:
    """Add the three tasks for the mapped ``upstream`` keys; returns the stage's output keys (an XComArg)."""
    on_kubernetes = config.gpu.mode == "kubernetes"
    if on_kubernetes and not step.image:
        raise ConfigError(f"{config.pair}: {step.image_setting} is empty; build docker/{step.task_id}.Dockerfile and set it")
    concurrency = stage.resources.concurrency

    @task(task_id=step.prepare_task_id, max_active_tis_per_dagrun=concurrency)
    def prepare(input_key: str, **context: Any) -> dict[str, Any]:
        return stage(make_context(context)).prepare(input_key, model_dir=step.image_model_dir if on_kubernetes else None)

    @task(task_id=stage.name, max_active_tis_per_dagrun=concurrency)
    def finish(job: dict[str, Any], **context: Any) -> str:
        return stage(make_context(context)).finish(job)

    jobs = prepare.expand(input_key=upstream)
    if on_kubernetes:
        middle = _pod(stage, step, config).expand(arguments=jobs.map(_arguments))
    else:
        in_env = task.external_python(
            task_id=step.task_id, python=str(step.python), expect_airflow=False, max_active_tis_per_dagrun=step.concurrency
        )(run_script_in_env)
        middle = in_env.partial(script=str(step.script)).expand(job=jobs)
    outputs = finish.expand(job=jobs)
    middle >> outputs
    return outputs


def _arguments(job: dict[str, Any]) -> list[str]:
    return job["arguments"]


def _pod(stage: type[Stage], step: ExternalStep, config: PairConfig) -> Any:
    """The pod of the step: the dispatch's placement and an S3-free environment, CPU only, the step's own image."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

    return KubernetesPodOperator.partial(
        task_id=step.task_id,
        name=f"bitextflow-{config.pair}-{step.task_id}",
        namespace=config.gpu.namespace,
        image=step.image,
        cmds=list(step.image_command),
        labels={"app.kubernetes.io/name": "bitextflow", "bitextflow/pair": config.pair, "bitextflow/stage": step.task_id},
        **pod_placement(config.gpu),
        get_logs=True,
        on_finish_action="delete_succeeded_pod",
        max_active_tis_per_dagrun=4,
    )
