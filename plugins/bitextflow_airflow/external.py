"""A stage with an external step (bicleaner-ai's environment): three mapped tasks per shard instead of one.

``<stage>_shards`` lists the upstream's shards (its tasks each give a site partition's), then
``<prepare_task_id>[shard]`` (worker: :meth:`Stage.prepare`, e.g. our hard rules and the bicleaner input
in S3) -> ``<task_id>[shard]`` (the step's script in its own environment) -> ``<stage>[shard]`` (worker:
:meth:`Stage.finish`). The job between them, an XCom value, holds storage keys, never a signed URL.

The middle task signs what the script needs (:meth:`Stage.external_call`) when it starts, with the S3
connection of the worker, for as long as its ``execution_timeout`` lets it run: nothing signed goes
through XCom or the rendered templates the UI shows, and a task that starts late or retries signs anew.
Locally it runs the script in the step's interpreter as a subprocess (:meth:`Stage.run_external`, as the
CLI does), the URLs in that process's environment. With ``gpu.mode: kubernetes`` a ``KubernetesPodOperator``
runs it in the step's image, the URLs in the pod's environment: whoever may read pod specs in the namespace
sees them while the pod exists (failed pods are kept for debugging), until they expire. A job with nothing
for the step passes the middle task untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk import task

from bitextflow.config import PairConfig
from bitextflow.errors import ConfigError
from bitextflow.stages.base import ExternalStep, RunContext, Stage
from bitextflow.stages.registry import as_inputs
from bitextflow_airflow.dispatch import pod_placement
from bitextflow_airflow.failures import failing_at_once


def external_step_tasks(
    stage: type[Stage], step: ExternalStep, config: PairConfig, upstream: Any, make_context: Callable[[dict], RunContext]
) -> Any:
    """Add the three tasks for the mapped ``upstream`` keys; returns the stage's output keys (an XComArg)."""
    on_kubernetes = config.gpu.mode == "kubernetes"
    if on_kubernetes and not step.image:
        raise ConfigError(f"{config.pair}: {step.image_setting} is empty; build docker/{step.task_id}.Dockerfile and set it")
    concurrency = stage.resources.concurrency

    @task(task_id=step.prepare_task_id, max_active_tis_per_dagrun=concurrency)
    @failing_at_once
    def prepare(input_key: str, **context: Any) -> dict[str, Any]:
        return stage(make_context(context)).prepare(input_key, model_dir=step.image_model_dir if on_kubernetes else None)

    @task(task_id=step.task_id, max_active_tis_per_dagrun=step.concurrency)
    @failing_at_once
    def run_step(job: dict[str, Any], **context: Any) -> None:
        stage(make_context(context)).run_external(job, context["task"].execution_timeout)

    @task(task_id=stage.name, max_active_tis_per_dagrun=concurrency)
    @failing_at_once
    def finish(job: dict[str, Any], **context: Any) -> str:
        return stage(make_context(context)).finish(job)

    @task(task_id=f"{stage.name}_shards")
    def shards(outputs: Any) -> list[str]:
        """The upstream's shards one by one: its tasks give a site partition's shards each."""
        return as_inputs(outputs)

    jobs = prepare.expand(input_key=shards(upstream))
    middle = _pod(stage, step, config, make_context).expand(job=jobs) if on_kubernetes else run_step.expand(job=jobs)
    outputs = finish.expand(job=jobs)
    middle >> outputs
    return outputs


def _pod(stage: type[Stage], step: ExternalStep, config: PairConfig, make_context: Callable[[dict], RunContext]) -> Any:
    """The pod of the step: the dispatch's placement and an S3-free environment, CPU only, the step's own image."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
    from airflow.sdk.log import mask_secret
    from kubernetes.client import models as k8s

    class ExternalStepPod(KubernetesPodOperator):
        """Signs the job's call as the task starts; its URLs reach the pod as environment variables, which are set
        after the templates are rendered (and recorded for the UI), so they are neither in XCom nor in the UI."""

        def __init__(self, *, job: dict[str, Any], **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.job = job

        @failing_at_once
        def execute(self, context: Any) -> Any:
            call = stage(make_context(context)).external_call(self.job, self.execution_timeout)
            if call is None:
                return None
            for value in call.env.values():
                mask_secret(value)  # the operator logs the pod it submits at debug level
            self.arguments = call.arguments
            self.env_vars = [*self.env_vars, *(k8s.V1EnvVar(name=name, value=value) for name, value in call.env.items())]
            return super().execute(context)

    return ExternalStepPod.partial(
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
