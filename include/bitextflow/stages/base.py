"""The stage contract: what every stage module declares, and the run context a stage works in.

A stage is one module with one :class:`Stage` subclass. It declares its ``name``, the stage whose
outputs it reads (``after``), the pattern of its output shards (``outputs``), how its work splits into
tasks (``partitioning``) and what a task needs (``resources``); ``setup()`` loads what every shard of
a task shares (models, dictionaries) once, and ``run()`` processes its inputs. The registry
(:mod:`bitextflow.stages.registry`) orders the stages; the CLI, the Airflow DAG factory and GPU
dispatch all iterate it, so a new stage is one module plus one registry line (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal

from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import BitextflowError, StageError
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import stage_key
from bitextflow.storage.tables import stage_outputs

log = logging.getLogger(__name__)

#: ``shard``: one task per input shard (Airflow maps the stage over its inputs); ``run``: one task for
#: all of the run's inputs; ``model``: a step that trains a model for later runs (its own DAG).
Partitioning = Literal["shard", "run", "model"]


@dataclass(frozen=True)
class Resources:
    """What one task of a stage needs. ``gpu``: the step runs where ``gpu.mode`` says (worker or pod),
    once for all shards so that its model loads once; ``concurrency``: tasks at a time per run."""

    gpu: bool = False
    concurrency: int | None = None


@dataclass(frozen=True)
class RunContext:
    """What a stage needs to know about its run. ``on_counts`` sees every count a stage writes (the
    Airflow glue shows them on the task instance); ``stage_order``: the names of the registry's stages
    in order, which orders a run's counts (:func:`bitextflow.stages.registry.run_context` fills it);
    ``provenance``: who started the run and what it changed (``user``, ``via``, the run's ``overrides``, the
    operator's ``set``), recorded with what the run publishes for later runs (a model's metadata)."""

    config: PairConfig
    store: ObjectStore
    run_id: str
    on_counts: Callable[[str, StageCounts], None] | None = None
    stage_order: tuple[str, ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def key(self, stage: str, name: str) -> str:
        return stage_key(self.config.pair, self.run_id, stage, name)

    def write_counts(self, stage: str, shard: str, counts: StageCounts) -> None:
        """Write a shard's counts; refused when they do not add up, so that no stage loses items silently."""
        if (problem := counts.unbalanced()) is not None:
            raise StageError(
                f"stage {stage}, shard {shard}: its counts do not add up: {problem}; every item a stage reads must be "
                "kept or dropped under a reason (a bug in the stage: please report it with this message)"
            )
        self.store.put_json(self.key(stage, f"{shard}.counts.json"), counts.to_dict())
        log.info("%s [%s]", counts.summary(), shard)
        if self.on_counts is not None:
            self.on_counts(shard, counts)

    def outputs(self, folder: str, pattern: re.Pattern[str]) -> list[str]:
        """Keys directly in the run's ``folder`` whose names match ``pattern``, sorted."""
        return stage_outputs(self.store, self.config.pair, self.run_id, folder, pattern)


@contextlib.contextmanager
def naming_the_input(stage: str, inputs: object) -> Iterator[None]:
    """Turn an unexpected error of ``stage`` on ``inputs`` into one line that names both (the original stays
    chained, for the log); errors the user can act on (:class:`BitextflowError`) pass as they are."""
    try:
        yield
    except BitextflowError:
        raise
    except Exception as exc:
        if isinstance(inputs, str):
            shown = inputs
        elif isinstance(inputs, Sequence) and len(inputs):
            shown = f"{len(inputs)} inputs ({inputs[0]}, ...)"
        else:
            shown = "its run"
        detail = " ".join(str(exc).split())[:300]
        raise StageError(f"{stage} failed on {shown}: {type(exc).__name__}: {detail}") from exc


def shard_name(key: str) -> str:
    """``.../crawl/crawl-00003.warc.gz`` -> ``crawl-00003``: output shards keep their input's name."""
    return Path(key).name.split(".")[0]


@dataclass(frozen=True)
class ExternalStep:
    """A step of a stage that runs in another Python environment (bicleaner-ai's): locally in that environment's
    interpreter (:meth:`Stage.run_external`), in a pod with ``image``. In a DAG the stage becomes three tasks per
    shard: ``prepare_task_id`` (:meth:`Stage.prepare`), ``task_id`` (this step) and the stage's own name
    (:meth:`Stage.finish`)."""

    task_id: str
    prepare_task_id: str
    image: str
    #: The pair config option that names ``image`` (for errors).
    image_setting: str
    #: How the step's image runs its script, and where it keeps the model (passed to :meth:`Stage.prepare` for a pod).
    image_command: tuple[str, ...]
    image_model_dir: str
    concurrency: int = 2


@dataclass(frozen=True)
class ExternalCall:
    """One run of an external step's script, made when the task that runs it starts: its ``arguments`` and ``env``,
    the variables that carry what must stay out of XCom, rendered templates and argv (presigned URLs: every local
    user may read a process's /proc/<pid>/cmdline, not its environment)."""

    arguments: list[str]
    env: dict[str, str] = field(repr=False)


class Stage:
    """Base class of every stage; subclasses set the class attributes and override :meth:`run`."""

    name: ClassVar[str]
    #: The stage whose outputs are this stage's inputs (None: the first stage).
    after: ClassVar[str | None] = None
    #: Names of this stage's output shards, as written under ``<pair>/<run>/<folder>/`` (folder = the name).
    outputs: ClassVar[re.Pattern[str] | None] = None
    #: The folder of the run those outputs are in, when not the stage's own (a gate passes its inputs on).
    output_folder: ClassVar[str | None] = None
    partitioning: ClassVar[Partitioning] = "shard"
    #: A ``shard`` stage's outputs per input: one key, or a list of keys (a crawl host group: its WARC files).
    outputs_per_input: ClassVar[Literal["one", "many"]] = "one"
    resources: ClassVar[Resources] = Resources()
    #: The quality gate this stage runs (its Data Docs get a link on the task), if any.
    gate: ClassVar[str | None] = None
    #: The asset the stage updates (data-aware scheduling), if any.
    asset: ClassVar[str | None] = None
    help: ClassVar[str] = ""

    def __init__(self, ctx: RunContext, options: Mapping[str, Any] | None = None) -> None:
        self.ctx = ctx
        self.options = dict(options or {})

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Command-line options of the stage's ``bitextflow <stage>`` command beyond pair and run (its ``options``)."""

    @classmethod
    def folder(cls) -> str:
        """The folder of the run that holds this stage's output shards."""
        return cls.output_folder or cls.name

    @classmethod
    def enabled(cls, config: PairConfig) -> bool:
        """Whether a pair's runs include this stage; decided by the pair config alone (never by the host)."""
        return True

    @classmethod
    def reads(cls, config: PairConfig) -> str | None:
        """The stage whose outputs this pair's runs give this stage: ``after``, unless the pair's source changes it
        (extract reads the crawl's WARC files, or cc_fetch's in a run from a Common Crawl index). It names a stage
        registered before this one; the registry checks that the run includes it."""
        return cls.after

    @classmethod
    def runs_on_gpu(cls, config: PairConfig) -> bool:
        """Whether this pair runs the stage as one GPU step (see :class:`Resources`)."""
        return cls.resources.gpu

    @classmethod
    def first_inputs(cls, config: PairConfig) -> list[str]:
        """For the first stage (no ``after``): its inputs, from the pair config alone (a ``shard`` first stage
        gets one task per item, e.g. the crawl's host groups)."""
        return []

    @classmethod
    def max_tasks(cls, config: PairConfig) -> int | None:
        """For a ``shard`` stage: the most tasks its input shards are grouped into (None: one task per shard)."""
        return None

    @classmethod
    def plans_tasks(cls, config: PairConfig) -> bool:
        """Whether the stage's tasks are listed by a step of their own (a ``<stage>_plan`` task in a DAG): the first
        stage's, a stage with :meth:`max_tasks`, a stage with its own :meth:`plan`."""
        return cls.partitioning == "shard" and (
            cls.reads(config) is None or cls.max_tasks(config) is not None or cls.plan is not Stage.plan
        )

    def plan(self, inputs: Sequence[str]) -> list[str] | None:
        """For a ``shard`` stage whose tasks are not simply one per input: each task's input, made from the outputs
        of the stage it reads (the ``partition`` stage: one per site partition); None: one task per input. With
        :meth:`max_tasks`, the planned inputs are then grouped into batches as the inputs would be."""
        return None

    @classmethod
    def external_step(cls, config: PairConfig) -> ExternalStep | None:
        """A step in another environment between :meth:`prepare` and :meth:`finish`, when the pair needs one."""
        return None

    def setup(self) -> None:
        """Load what every shard of the task shares (models, dictionaries); called once per task."""

    def run(self, inputs: Sequence[str]) -> Any:
        """Process ``inputs`` (one key for a ``shard`` stage, every input key for a ``run`` stage). A task of a
        ``shard`` stage with :meth:`max_tasks` calls it once per key of its batch, after one :meth:`setup`."""
        raise NotImplementedError

    def prepare(self, input_key: str, model_dir: str | None = None) -> dict[str, Any]:
        """With an external step: the work before it; returns the job (an XCom value in a DAG: storage keys and
        settings, never a credential nor a signed URL). ``model_dir``: the model folder as the step sees it (an
        image's), by default the local one."""
        raise NotImplementedError

    def external_call(self, job: dict[str, Any], timeout: timedelta | None) -> ExternalCall | None:
        """With an external step: the call of its script for ``job``, signed now for a task that may run ``timeout``
        (None: no limit set); None when the job has nothing for the step."""
        raise NotImplementedError

    def run_external(self, job: dict[str, Any], timeout: timedelta | None) -> None:
        """With an external step: :meth:`external_call` run in the step's local environment (the CLI, a local task)."""
        raise NotImplementedError

    def finish(self, job: dict[str, Any]) -> Any:
        """With an external step: the work after it."""
        raise NotImplementedError

    def output_key(self, input_key: str) -> str:
        """The output of one input shard (a GPU step writes them elsewhere; the DAG checks they exist)."""
        raise NotImplementedError
