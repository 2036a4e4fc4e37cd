"""The shape of the code: import-linter's layer contracts, module sizes, the stage registry as the one list.

The tests of this module against real services; those that need none are tests/unit/test_architecture.py's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bitextflow.config import load_pair_config
from bitextflow.stages.base import Stage
from bitextflow.stages.registry import REGISTRY
from tests.support import ROOT
from tests.unit.test_architecture import CountPairs


def test_a_stage_registered_from_outside_gets_its_task_and_command(airflow_db: Path) -> None:
    """Adding a stage is a module plus a registry line: the DAG factory and the CLI pick it up."""
    from bitextflow.cli import build_parser
    from bitextflow_airflow.pair_dag import build_pair_dag

    registry = REGISTRY.with_stage(CountPairs)
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    dag = build_pair_dag(config, ROOT / "include" / "pairs" / "en-es.yaml", registry)
    task = dag.get_task("count_pairs")
    assert task.upstream_task_ids == {"gate"}
    assert "count_pairs" not in {t.task_id for t in build_pair_dag(config, Path("en-es.yaml")).tasks}
    assert build_parser(registry).parse_args(["count-pairs", "--pair", "en-es", "--run-id", "r"]).stage == "count_pairs"


def test_the_dag_shape_depends_on_the_pair_config_alone(airflow_db: Path, tmp_path: Path, monkeypatch) -> None:
    """``score.use_bicleaner: if-installed`` gives the bicleaner tasks whether or not the environment is on this host."""
    from bitextflow_airflow.pair_dag import build_pair_dag

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides({"score.use_bicleaner": "if-installed"})
    shapes = []
    for python in (tmp_path / "absent" / "python", Path(sys.executable)):
        monkeypatch.setenv("BITEXTFLOW_BICLEANER_PYTHON", str(python))
        shapes.append(sorted(t.task_id for t in build_pair_dag(config, Path("en-es.yaml")).tasks))
    assert shapes[0] == shapes[1] and "bicleaner" in shapes[0]


class Broken(Stage):
    """A toy shard stage whose second shard trips over a bug."""

    name = "broken"
    after = "gate"
    partitioning = "shard"

    def run(self, key: str) -> str:
        if key.endswith("b.parquet"):
            raise ValueError("boom\nwith a second line")
        return key


def test_a_stage_that_fails_says_which_input_and_why_in_one_line(store) -> None:
    from bitextflow.errors import StageError
    from bitextflow.stages.registry import run_context, run_stage

    ctx = run_context(load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml"), store, "r")
    with pytest.raises(StageError) as failure:
        run_stage(ctx, Broken, ["x/a.parquet", "x/b.parquet"])
    assert str(failure.value) == "broken failed on x/b.parquet: ValueError: boom with a second line"
    assert isinstance(failure.value.__cause__, ValueError), "the original stays chained for the task log"
