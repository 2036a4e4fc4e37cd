"""The classify stage when the pair has a domain classifier: one GPU step for the run (docs/gpu.md, docs/classify.md).

Without ``domain.classifier`` the stage only weighs domain terms, so it stays a mapped worker task per shard.
With one, its inference (a fine-tuned transformer) is a :func:`~bitextflow_airflow.dispatch.gpu_step`:
the worker (``gpu.mode: in-process``, the default) or a GPU pod (``kubernetes``) runs
``bitextflow classify --pair <pair> --run-id <run>`` over every shard the score stage wrote, loading the
model once; then ``classified[shard]`` hands each shard's output key to the gate, checking it exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bitextflow import pipeline
from bitextflow.config import PairConfig
from bitextflow_airflow.dispatch import gpu_step


def runs_as_gpu_step(config: PairConfig) -> bool:
    return bool(config.domain.classifier)


def classified_shards(config: PairConfig, scored: Any, make_context: Callable[[PairConfig, dict], pipeline.RunContext]) -> Any:
    """Add the classify step after the mapped ``scored`` keys; returns the classified keys (an XComArg)."""
    from airflow.sdk import task

    step = gpu_step("classify", config)

    @task(max_active_tis_per_dagrun=4)
    def classified(scored_key: str, **context: Any) -> str:
        return pipeline.classified_key(make_context(config, context), scored_key)

    keys = classified.expand(scored_key=scored)
    scored >> step >> keys
    return keys
