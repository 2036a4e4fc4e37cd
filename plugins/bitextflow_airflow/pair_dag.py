"""One DAG per pair config: the stages of the registry as tasks, each on the outputs of the stage it reads.

A ``shard`` stage is mapped over its input shards, a ``run`` stage is one task; a stage with an
external step (bicleaner-ai) becomes prepare -> step -> finish per shard (:mod:`.external`); a stage
that runs on a GPU is one step for all shards plus a mapped check of each output (:mod:`.dispatch`).
Shard keys travel as XCom; the data itself stays in S3. The shape depends on the pair config alone.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Asset, Param, task

from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.stages.base import RunContext, Stage, shard_name
from bitextflow.stages.registry import REGISTRY, StageRegistry, as_inputs, run_context, run_stage, task_inputs
from bitextflow_airflow.dispatch import gpu_step, run_provenance
from bitextflow_airflow.external import external_step_tasks
from bitextflow_airflow.failures import failing_at_once
from bitextflow_airflow.gate import GateOperator, ReleaseOperator
from bitextflow_airflow.storage import object_store

DOC_MD = """
### bitextflow: {pair}
Builds the {pair} corpus from the seeds of `{path}` and publishes `releases/{pair}/v<N>/`.
Override limits, thresholds, seeds or the strategy for one run with the `overrides` param, e.g.
`{{"crawl.max_pages": 200, "crawl.seeds": ["http://127.0.0.1:8765/"]}}`.
Each task logs its counts (in, kept, dropped by reason) and shows them in its XCom tab
(`counts.<shard>`); gate tasks have a **Data Docs** button. The run updates the assets
`bitextflow.{pair}.documents`, `.document_pairs`, `.sentence_pairs` and `.release`.
"""


def run_config(config: PairConfig, context: dict[str, Any]) -> PairConfig:
    """The DAG's config with the run's ``overrides`` param applied."""
    return config.with_run_overrides((context.get("params") or {}).get("overrides") or {})


def task_context(config: PairConfig, context: dict[str, Any], registry: StageRegistry = REGISTRY) -> RunContext:
    """The run context of a task: the DAG's config with the run's ``overrides`` param, the Airflow S3 connection."""
    effective = run_config(config, context)
    ti = context["ti"]

    def show_counts(shard: str, counts: StageCounts) -> None:
        # XCom is the task instance's own record: the UI's XCom tab lists in/kept/dropped per shard.
        ti.xcom_push(key=f"counts.{shard}", value=counts.to_dict())

    store = object_store(effective.storage.bucket)
    return run_context(effective, store, context["run_id"], show_counts, registry, run_provenance(context))


def stage_assets(config: PairConfig, registry: StageRegistry = REGISTRY) -> dict[str, Asset]:
    """The assets a pair's run updates, so other DAGs can be scheduled on them (data-aware scheduling).

    Each asset event's ``extra`` names the run and the objects it wrote.
    """
    bucket, pair = config.storage.bucket, config.pair
    assets = {}
    for stage in registry:
        if stage.asset:
            where = f"releases/{pair}" if stage.asset == "release" else f"{pair}/{stage.asset}"
            assets[stage.name] = Asset(name=f"bitextflow.{pair}.{stage.asset}", uri=f"s3://{bucket}/{where}")
    return assets


def _stage_callable(stage: type[Stage], config: PairConfig, registry: StageRegistry, asset: Asset | None) -> Any:
    """The function a task of ``stage`` runs: setup, run, then announce the asset it updated."""

    def run_task(inputs: Any = (), **context: Any) -> Any:
        # A mapped task gets one shard (a key) or a batch of them (Stage.max_tasks); it returns as it got.
        written = run_stage(task_context(config, context, registry), stage, as_inputs(inputs))
        if stage.partitioning == "shard" and isinstance(inputs, str) and stage.outputs_per_input == "one":
            written = written[0]
        if asset is not None:
            context["outlet_events"][asset].extra = {"run_id": context["run_id"], "written": written}
        return written

    run_task.__name__ = stage.name
    return failing_at_once(run_task)


def add_stage(dag: DAG, stage: type[Stage], config: PairConfig, upstream: Any, registry: StageRegistry, assets: dict) -> Any:
    """Add ``stage``'s tasks to ``dag`` after ``upstream`` (an XComArg of the stage it reads, or None); returns its outputs."""
    if stage.runs_on_gpu(config):
        step = gpu_step(stage.name, config)

        @task(task_id=f"{stage.name}_outputs", max_active_tis_per_dagrun=stage.resources.concurrency)
        @failing_at_once
        def outputs(inputs: Any, **context: Any) -> Any:
            task_context_ = task_context(config, context, registry)
            keys = [stage(task_context_).output_key(key) for key in as_inputs(inputs)]
            for key in keys:
                # the step ran in one task (or a pod) for every shard: each shard's counts show on its own task
                # instance, as a mapped stage's do
                counts_key = task_context_.key(stage.name, f"{shard_name(key)}.counts.json")
                if task_context_.store.exists(counts_key):
                    task_context_.on_counts(shard_name(key), StageCounts.from_dict(task_context_.store.get_json(counts_key)))
            return keys[0] if isinstance(inputs, str) else keys

        keys = outputs.expand(inputs=upstream)
        upstream >> step >> keys
        return keys
    external = stage.external_step(config)
    if external is not None:
        return external_step_tasks(stage, external, config, upstream, lambda context: task_context(config, context, registry))
    asset = assets.get(stage.name)
    outlets = [asset] if asset is not None else []
    function = _stage_callable(stage, config, registry, asset)
    if stage.gate:
        operator_class = ReleaseOperator if stage.name == "release" else GateOperator
        operator = operator_class(
            task_id=stage.name, python_callable=function, op_args=[upstream] if upstream is not None else [],
            outlets=outlets, bucket=config.storage.bucket, pair=config.pair, gate=stage.gate, dag=dag,
        )  # fmt: skip
        return operator.output
    decorated = task(function, task_id=stage.name, outlets=outlets, max_active_tis_per_dagrun=stage.resources.concurrency)
    if stage.partitioning != "shard":
        return decorated(upstream) if upstream is not None else decorated()
    if stage.plans_tasks(config):
        upstream = _planned(stage, config, upstream, registry)
    return decorated.expand(inputs=upstream)


def _planned(stage: type[Stage], config: PairConfig, upstream: Any, registry: StageRegistry) -> Any:
    """A ``<stage>_plan`` task that lists the stage's tasks with the run's overrides (:func:`task_inputs`): the crawl's
    host groups of this run's seeds, extract's batches of WARC files (so that a run over thousands stays under
    ``max_map_length``), one per site partition."""

    @task(task_id=f"{stage.name}_plan")
    @failing_at_once
    def plan(keys: Any = (), **context: Any) -> list[str | list[str]]:
        return task_inputs(task_context(config, context, registry), stage, as_inputs(keys))

    return plan(upstream) if upstream is not None else plan()


def build_pair_dag(config: PairConfig, config_path: Path, registry: StageRegistry = REGISTRY) -> DAG:
    # Retries ride out a storage or network outage: waits of at least 15, 30 and 60 s (Airflow's
    # exponential backoff adds up to as much again), so an S3 endpoint down for 90 s loses nothing.
    default_args = {
        "retries": 3,
        "retry_delay": timedelta(seconds=15),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=10),
        "execution_timeout": timedelta(hours=6),
    }
    with DAG(
        dag_id=config.dag_id,
        description=config.description or f"{config.pair} parallel corpus",
        schedule=config.schedule,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        default_args=default_args,
        tags=["bitextflow", config.pair],
        params={"overrides": Param({}, type="object", description="section.field -> value, for this run only")},
        doc_md=DOC_MD.format(pair=config.pair, path=config_path.name),
    ) as dag:
        assets = stage_assets(config, registry)
        outputs: dict[str, Any] = {}
        for stage in registry.run_stages(config):
            reads = stage.reads(config)
            upstream = outputs[reads] if reads else None
            outputs[stage.name] = add_stage(dag, stage, config, upstream, registry, assets)
    return dag
