"""GPU-step dispatch: one step, run in the Airflow worker (default) or as a Kubernetes pod.

``gpu_step("score", config)`` inside a DAG gives, by ``config.gpu.mode``:

- ``in-process``: a TaskFlow task that runs the stage from the registry in the worker over every
  input shard of the run (as its command would), with the DAG's pair config, the run's ``overrides``
  param and the Airflow S3 connection;
- ``kubernetes``: a ``KubernetesPodOperator`` running the same command
  (``bitextflow <stage> --pair <pair> --run-id {{ run_id }} --overrides <the run's overrides param>``)
  in ``gpu.image``, with an
  ``nvidia.com/gpu`` limit, node selector, tolerations, CPU/memory requests and S3 settings read
  from the Kubernetes secret ``gpu.s3_secret`` (secret references only: no credential is ever
  written into the pod spec).

Both paths run the same registry stage (the pod through the ``bitextflow`` CLI, which iterates the same
registry). See docs/gpu.md for switching a pair to Kubernetes and for what the pod looks like.
"""

from __future__ import annotations

from typing import Any

from bitextflow.config import GpuDispatchConfig, PairConfig
from bitextflow.errors import ConfigError
from bitextflow.stages.registry import REGISTRY, as_inputs, run_context, run_stage, stored_inputs, task_inputs
from bitextflow.storage import ObjectStore
from bitextflow_airflow.failures import failing_at_once

EXECUTABLE = "bitextflow"
RUN_ID_TEMPLATE = "{{ run_id }}"
# The run's ``overrides`` param as JSON ({} in a DAG without that param); the pod applies it like the worker.
OVERRIDES_TEMPLATE = "{{ (params.get('overrides') or {}) | tojson }}"
# Pod environment taken from the secret ``gpu.s3_secret`` (key = variable name); False: may be absent.
S3_SECRET_KEYS: dict[str, bool] = {
    "BITEXTFLOW_S3_ACCESS_KEY_ID": True,
    "BITEXTFLOW_S3_SECRET_ACCESS_KEY": True,
    "BITEXTFLOW_S3_ENDPOINT_URL": False,  # absent on AWS S3 itself
    "BITEXTFLOW_S3_REGION": False,
}
# Plain settings of the pod: never read a local services file, no analytics calls from GX.
POD_ENV = {"BITEXTFLOW_SERVICES_ENV": "", "GX_ANALYTICS_ENABLED": "false"}


def step_command(stage: str, config: PairConfig, run_id: str = RUN_ID_TEMPLATE, overrides: str = OVERRIDES_TEMPLATE) -> list[str]:
    """The command of one step: ``bitextflow <stage> --pair <pair> --run-id <run_id> --overrides <json>``."""
    REGISTRY.get(stage)  # an unknown stage is one clear error, at DAG parse time
    return [EXECUTABLE, stage.replace("_", "-"), "--pair", config.pair, "--run-id", run_id, "--overrides", overrides]


def gpu_step(stage: str, config: PairConfig, *, task_id: str | None = None, **operator_kwargs: Any) -> Any:
    """The operator that runs ``stage`` for ``config`` where ``config.gpu.mode`` says; call it in a DAG.

    ``operator_kwargs`` go to the operator (retries, pool, ...). Returns the operator (a TaskFlow
    task's operator in-process, a ``KubernetesPodOperator`` otherwise): chain it with ``>>``.
    """
    step_command(stage, config)
    task_id = task_id or stage
    if config.gpu.mode == "kubernetes":
        return pod_operator(stage, config, task_id=task_id, **operator_kwargs)
    return _in_process_task(stage, config, task_id, operator_kwargs)


def _in_process_task(stage: str, config: PairConfig, task_id: str, operator_kwargs: dict) -> Any:
    from airflow.sdk import task

    @task(task_id=task_id, **operator_kwargs)
    @failing_at_once
    def run_step(**context: Any) -> object:
        overrides = (context.get("params") or {}).get("overrides") or {}
        return run_in_process(stage, config, context["run_id"], overrides, provenance=run_provenance(context))

    return run_step().operator


def run_provenance(context: dict[str, Any]) -> dict[str, Any]:
    """Who started a DAG run and what it changed (:attr:`bitextflow.stages.base.RunContext.provenance`): the
    triggering user as Airflow records it (none for a scheduled run), the DAG and the run's ``overrides`` param."""
    dag_run = context.get("dag_run")
    return {
        "via": "airflow",
        "user": getattr(dag_run, "triggering_user_name", None),
        "run_type": getattr(getattr(dag_run, "run_type", None), "value", None),  # manual, scheduled, backfill, ...
        "dag_id": getattr(dag_run, "dag_id", None),
        "overrides": (context.get("params") or {}).get("overrides") or {},
    }


def run_in_process(
    stage: str,
    config: PairConfig,
    run_id: str,
    overrides: dict[str, Any] | None = None,
    store: ObjectStore | None = None,
    provenance: dict[str, Any] | None = None,
) -> object:
    """Run the step in this process as its command would: every input shard of the run (found in the store),
    with the DAG's config (not a file looked up again) and the run's ``overrides``; ``store`` defaults to
    the Airflow S3 connection (or the environment); ``provenance``: who started the run (:func:`run_provenance`)."""
    from bitextflow_airflow.storage import object_store

    effective = config.with_run_overrides(overrides or {})
    ctx = run_context(effective, store or object_store(effective.storage.bucket), run_id, provenance=provenance)
    step = REGISTRY.get(stage)
    return run_stage(ctx, step, as_inputs(task_inputs(ctx, step, stored_inputs(ctx, step))))


def pod_operator(stage: str, config: PairConfig, *, task_id: str | None = None, **operator_kwargs: Any) -> Any:
    """A ``KubernetesPodOperator`` running the step's command with ``config.gpu``'s image and placement."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

    gpu = config.gpu
    if not gpu.image:
        raise ConfigError(f"{config.pair}: gpu.image is empty; set it to the GPU worker image (docker/gpu-worker.Dockerfile)")
    executable, *arguments = step_command(stage, config)
    defaults: dict[str, Any] = {
        "startup_timeout_seconds": 900,  # a GPU node may have to be provisioned first
        "on_finish_action": "delete_succeeded_pod",  # failed pods stay for `kubectl logs/describe`
        "get_logs": True,
        "image_pull_policy": "IfNotPresent",
    }
    return KubernetesPodOperator(
        **{**defaults, **operator_kwargs},
        task_id=task_id or stage,
        name=f"bitextflow-{config.pair}-{stage}".replace("_", "-"),
        namespace=gpu.namespace,
        image=gpu.image,
        cmds=[executable],
        arguments=arguments,
        labels={"app.kubernetes.io/name": "bitextflow", "bitextflow/pair": config.pair, "bitextflow/stage": stage},
        env_vars=pod_env(gpu),
        container_resources=pod_resources(gpu),
        **pod_placement(gpu),
    )


def pod_placement(gpu: GpuDispatchConfig) -> dict[str, Any]:
    """Where and as whom a step's pod runs, and how Airflow reaches the cluster: shared by every pod we build."""
    return {
        "node_selector": dict(gpu.node_selector) or None,
        "tolerations": pod_tolerations(gpu) or None,
        "service_account_name": gpu.service_account,
        "kubernetes_conn_id": gpu.kubernetes_conn_id,
        "in_cluster": gpu.in_cluster,
        "config_file": gpu.config_file,
        "container_security_context": {"allowPrivilegeEscalation": False},
    }


def pod_env(gpu: GpuDispatchConfig) -> list:
    from kubernetes.client import models as k8s

    env = [k8s.V1EnvVar(name=name, value=value) for name, value in POD_ENV.items()]
    for name, required in S3_SECRET_KEYS.items():
        ref = k8s.V1SecretKeySelector(name=gpu.s3_secret, key=name, optional=None if required else True)
        env.append(k8s.V1EnvVar(name=name, value_from=k8s.V1EnvVarSource(secret_key_ref=ref)))
    return env


def pod_resources(gpu: GpuDispatchConfig) -> Any:
    from kubernetes.client import models as k8s

    limits = {"memory": gpu.memory}
    if gpu.gpus:
        limits["nvidia.com/gpu"] = str(gpu.gpus)  # extended resources: the request defaults to the limit
    return k8s.V1ResourceRequirements(requests={"cpu": gpu.cpu, "memory": gpu.memory}, limits=limits)


def pod_tolerations(gpu: GpuDispatchConfig) -> list:
    from kubernetes.client import models as k8s

    return [
        k8s.V1Toleration(key=t.key, operator=t.operator, value=t.value, effect=t.effect, toleration_seconds=t.toleration_seconds)
        for t in gpu.tolerations
    ]
