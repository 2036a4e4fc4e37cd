"""The shape of the code: import-linter's layer contracts, module sizes, the stage registry as the one list.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_architecture.py's.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from bitextflow.stages.base import Stage
from bitextflow.stages.registry import REGISTRY
from tests.support import ROOT

MAX_MODULE_LINES = 400
# Declarations rather than logic: the pair config's fields (one Field with its documentation each).
LONG_MODULES_ALLOWED = {"include/bitextflow/config.py"}


def test_import_contracts_hold() -> None:
    """The layers of pyproject.toml's [tool.importlinter]: no layer imports one above it, algorithms never
    touch storage, the core never imports Airflow or the demo tooling, no package cycle."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _python_files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py") if ".venv" not in path.parts)


def test_no_module_is_over_400_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in _python_files("include", "plugins", "dags", "tools")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
        and str(path.relative_to(ROOT)) not in LONG_MODULES_ALLOWED
    ]
    assert not long, "split these modules: " + "; ".join(long)


def test_the_code_and_docs_point_at_nothing_outside_the_repository() -> None:
    """A user's clone has no design file beside it: code and docs explain themselves."""
    texts = [*_python_files("include", "plugins", "dags", "tools"), *sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    pointing = [str(p.relative_to(ROOT)) for p in texts if "DESIGN.md" in p.read_text(encoding="utf-8")]
    assert not pointing, f"these files point at a design file the repository does not have: {pointing}"


def test_every_stage_is_in_one_registry_with_a_known_reader() -> None:
    names = REGISTRY.names()
    assert len(set(names)) == len(names)
    for stage in REGISTRY:
        assert stage.after is None or names.index(stage.after) < names.index(stage.name)
        assert stage.partitioning in ("shard", "run", "model")


class CountPairs(Stage):
    """A toy stage registered by the test: one task after the gate that counts the gated pairs."""

    name = "count_pairs"
    after = "gate"
    partitioning = "run"
    help = "count the gated pairs"

    def run(self, inputs: Sequence[str]) -> int:
        return len(inputs)


def test_a_stage_must_follow_the_stage_it_reads() -> None:
    from bitextflow.errors import ConfigError

    class Early(CountPairs):
        name = "early"
        after = "not_yet_registered"

    with pytest.raises(ConfigError, match="not registered before it"):
        REGISTRY.with_stage(Early)
