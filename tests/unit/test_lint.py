"""House rules checked mechanically: lint clean, and the core library never imports Airflow."""

import re
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT


def test_ruff_is_clean():
    ruff = Path(sys.executable).parent / "ruff"
    result = subprocess.run([str(ruff), "check", "--output-format", "concise", "include", "dags", "plugins", "tests", "bench"],
                            cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stdout


def test_code_is_formatted():
    """`ruff format` owns the layout: a hand-wrapped line that it would change fails here, not in review."""
    ruff = Path(sys.executable).parent / "ruff"
    result = subprocess.run([str(ruff), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_core_library_never_imports_airflow():
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "include" / "bitextflow").rglob("*.py")
        if re.search(r"^\s*(from|import)\s+airflow\b", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []
