"""The one list of stages. The CLI, the Airflow DAG factory and GPU dispatch iterate it.

Adding a stage is a module with a :class:`~bitextflow.stages.base.Stage` subclass plus one line in
:data:`REGISTRY` below (docs/architecture.md walks through it). Order matters: a stage comes after
the stage it reads (its ``after``); side steps such as ``train_url_models`` read an earlier stage and
nothing reads them; model steps (``partitioning = "model"``) get a DAG of their own. A stage that a pair
may leave out while a later stage reads it (``embed``) passes its inputs on, and the later stage reads
the left-out stage's own input instead (:meth:`~bitextflow.stages.base.Stage.reads`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bitextflow.catalog.run_outputs import RunOutputs
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import ConfigError, StageError
from bitextflow.stages.align_documents import AlignDocuments
from bitextflow.stages.align_sentences import AlignSentences
from bitextflow.stages.base import RunContext, Stage, naming_the_input
from bitextflow.stages.cc_fetch import CcFetch
from bitextflow.stages.cc_records import CcRecords
from bitextflow.stages.cc_select import CcSelect
from bitextflow.stages.cc_sites import CcSites
from bitextflow.stages.classify import Classify
from bitextflow.stages.crawl import Crawl
from bitextflow.stages.deduplicate import Deduplicate
from bitextflow.stages.embed import Embed
from bitextflow.stages.extract import Extract
from bitextflow.stages.gate import Gate
from bitextflow.stages.gate_documents import GateDocuments
from bitextflow.stages.monolingual import Monolingual
from bitextflow.stages.partition import Partition
from bitextflow.stages.release import Release
from bitextflow.stages.score import Score
from bitextflow.stages.train_domain import TrainDomain
from bitextflow.stages.train_url_models import TrainUrlModels
from bitextflow.storage import ObjectStore


@dataclass(frozen=True)
class StageRegistry:
    """Stages in run order; :meth:`with_stage` gives a registry with one more (tests, plugins)."""

    stages: tuple[type[Stage], ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for stage in self.stages:
            if stage.name in seen:
                raise ConfigError(f"stage {stage.name!r} is registered twice")
            if stage.after is not None and stage.after not in seen:
                raise ConfigError(f"stage {stage.name!r} reads {stage.after!r}, which is not registered before it")
            seen.add(stage.name)

    def __iter__(self) -> Iterator[type[Stage]]:
        return iter(self.stages)

    def names(self) -> tuple[str, ...]:
        return tuple(stage.name for stage in self.stages)

    def get(self, name: str) -> type[Stage]:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise ConfigError(f"unknown stage {name!r}; stages: {', '.join(self.names())}")

    def run_stages(self, config: PairConfig) -> tuple[type[Stage], ...]:
        """The stages of one run of ``config``'s pair, in order (model steps have their own DAG); each reads a stage
        the run includes before it (:meth:`~Stage.reads`)."""
        stages = tuple(stage for stage in self.stages if stage.partitioning != "model" and stage.enabled(config))
        included: set[str] = set()
        for stage in stages:
            if (upstream := stage.reads(config)) is not None and upstream not in included:
                raise ConfigError(
                    f"{config.pair}: stage {stage.name!r} reads {upstream!r}, which this pair's runs do not include"
                )
            included.add(stage.name)
        return stages

    def model_steps(self, config: PairConfig) -> tuple[type[Stage], ...]:
        return tuple(stage for stage in self.stages if stage.partitioning == "model" and stage.enabled(config))

    def run(self, ctx: RunContext, name: str, inputs: Sequence[str] | str = ()) -> Any:
        """Run the stage ``name`` in this process on the outputs ``inputs`` (keys, or one key) of the stage it reads,
        every task of it (:func:`task_inputs`) one after the other (see :func:`run_stage`)."""
        stage = self.get(name)
        return run_stage(ctx, stage, as_inputs(task_inputs(ctx, stage, as_inputs(inputs))))

    def with_stage(self, stage: type[Stage]) -> StageRegistry:
        """This registry plus ``stage`` at the end (its ``after`` must name a registered stage)."""
        return StageRegistry((*self.stages, stage))


REGISTRY = StageRegistry(
    (
        CcSites,
        CcSelect,
        CcRecords,
        CcFetch,
        Crawl,
        Extract,
        Partition,
        GateDocuments,
        Deduplicate,
        AlignDocuments,
        TrainUrlModels,
        Embed,
        AlignSentences,
        Score,
        Classify,
        Monolingual,
        Gate,
        Release,
        TrainDomain,
    )
)


def run_context(
    config: PairConfig,
    store: ObjectStore,
    run_id: str,
    on_counts: Callable[[str, StageCounts], None] | None = None,
    registry: StageRegistry = REGISTRY,
    provenance: Mapping[str, Any] | None = None,
) -> RunContext:
    """The context of one run, with the registry's stage order (which orders the run's counts) and who started it
    (:attr:`RunContext.provenance`)."""
    return RunContext(config, store, run_id, on_counts, registry.names(), dict(provenance or {}))


def stored_inputs(ctx: RunContext, stage: type[Stage], registry: StageRegistry = REGISTRY) -> list[str]:
    """The outputs of the stage ``stage`` reads, found in the store (a CLI command, a GPU step, a benchmark); none
    for the first stage and model steps. :func:`task_inputs` makes them the stage's tasks."""
    if (reads := stage.reads(ctx.config)) is None:
        return []
    upstream = registry.get(reads)
    listed = ctx.outputs(upstream.folder(), upstream.outputs) if upstream.outputs else []
    # an earlier attempt of the run (other partitions, other shards per task) may have left outputs beside these
    keys = RunOutputs(ctx.store, ctx.config.pair, ctx.run_id).current(listed)
    if not keys:
        raise StageError(
            f"no {upstream.folder()} output for run {ctx.run_id!r} of {ctx.config.pair}; "
            f"run `bitextflow {upstream.name.replace('_', '-')}` first"
        )
    return keys


def task_inputs(ctx: RunContext, stage: type[Stage], upstream: Sequence[str]) -> list[str | list[str]]:
    """What each task of ``stage`` gets, from the outputs of the stage it reads (as a DAG maps it): the first stage's
    inputs from the pair config, the stage's own :meth:`~Stage.plan`, batches of at most :meth:`~Stage.max_tasks`,
    or one task per input. A ``run`` stage is one task on every input."""
    if stage.partitioning != "shard":
        return [list(upstream)]
    inputs = stage.first_inputs(ctx.config) if stage.reads(ctx.config) is None else list(upstream)
    with naming_the_input(f"{stage.name} (planning)", inputs):
        planned = stage(ctx).plan(inputs)
    if planned is not None:
        inputs = list(planned)
    if (limit := stage.max_tasks(ctx.config)) is not None:
        return list(batches(inputs, limit))
    return list(inputs)


def run_stage(
    ctx: RunContext,
    stage: type[Stage],
    inputs: list[str],
    progress: Callable[[list[str], str], Iterable[str]] | None = None,
    options: Mapping[str, Any] | None = None,
) -> object:
    """Run one task of a stage on its inputs in this process (:func:`task_inputs` says what a task gets):
    ``setup()`` once, then ``run`` per shard (a ``shard`` stage; a list of outputs) or once on every input (a ``run``
    or ``model`` stage). ``progress`` wraps the shards (a progress bar); ``options`` are the stage's command-line
    options."""
    task = stage(ctx, options)
    with naming_the_input(stage.name, inputs):
        task.setup()
    if stage.partitioning == "shard":
        outputs = []
        for key in progress(inputs, stage.name) if progress else inputs:
            with naming_the_input(stage.name, key):
                outputs.append(task.run(key))
        return as_inputs(outputs)  # a shard may give several keys (a crawl's host group: its WARC files)
    with naming_the_input(stage.name, inputs):
        return task.run(inputs)


def as_inputs(outputs: Any) -> list[str]:
    """A stage's outputs as the next stage's inputs: one key (a ``run`` stage's), a sequence of keys, or a
    sequence of batches of keys (a batched ``shard`` stage's tasks), in order."""
    if outputs is None:
        return []
    if isinstance(outputs, str):
        return [outputs]
    keys: list[str] = []
    for item in outputs:
        keys.extend([item] if isinstance(item, str) else item)
    return keys


def batches(keys: Sequence[str], max_tasks: int) -> list[list[str]]:
    """``keys`` in order, cut into at most ``max_tasks`` contiguous batches whose sizes differ by one at most."""
    count = min(max_tasks, len(keys))
    if count == 0:
        return []
    size, larger = divmod(len(keys), count)
    cut = [0]
    for index in range(count):
        cut.append(cut[-1] + size + (1 if index < larger else 0))
    return [list(keys[cut[i] : cut[i + 1]]) for i in range(count)]


def run_pipeline(
    ctx: RunContext,
    registry: StageRegistry = REGISTRY,
    until: str | None = None,
    progress: Callable[[list[str], str], Iterable[str]] | None = None,
) -> dict[str, Any]:
    """Every stage of the run in order (up to, not including, ``until``), each on the outputs of the stage it
    reads, its tasks one after the other in this process with one ``setup()``; returns each stage's outputs by name."""
    outputs: dict[str, Any] = {}
    for stage in registry.run_stages(ctx.config):
        if stage.name == until:
            break
        reads = stage.reads(ctx.config)
        upstream = as_inputs(outputs[reads] if reads else None)
        outputs[stage.name] = run_stage(ctx, stage, as_inputs(task_inputs(ctx, stage, upstream)), progress)
    return outputs
