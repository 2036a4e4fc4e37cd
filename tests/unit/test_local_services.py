"""The local stack's tooling without starting it: secret files, the one-line errors where a server it needs is missing,
`prepare` of a pair without a dictionary or a margin calibration, and how Airflow's components share their SQLite database (the stack itself is
tests/stack's)."""

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def test_secret_files_are_owner_only_even_when_they_existed_with_a_looser_mode(tmp_path) -> None:
    from bitextflow_local.services.private import write_private

    secret = tmp_path / ".local" / "services.env"
    secret.parent.mkdir()
    secret.write_text("OLD=1\n")
    secret.chmod(0o644)
    write_private(secret, "BITEXTFLOW_S3_SECRET_ACCESS_KEY=s3cr3t\n")
    assert secret.stat().st_mode & 0o777 == 0o600
    assert secret.read_text() == "BITEXTFLOW_S3_SECRET_ACCESS_KEY=s3cr3t\n"
    write_private(tmp_path / "new.env", "X=1\n")
    assert (tmp_path / "new.env").stat().st_mode & 0o777 == 0o600


def test_a_missing_redis_server_is_one_line_naming_the_package(tmp_path) -> None:
    env = {**os.environ, "BITEXTFLOW_HOME": str(tmp_path), "PATH": str(BIN)}
    result = subprocess.run(
        [str(BIN / "bitextflow-local"), "services", "up", "--executor", "celery"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "bitextflow-local: error: `redis-server` is not installed; install the Debian package redis-server"
    ]
    assert not (tmp_path / ".local" / "stack.json").exists()


def test_postgres_is_found_on_path_or_in_the_newest_debian_folder(tmp_path, monkeypatch) -> None:
    from bitextflow_local.services import postgres

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(postgres, "DEBIAN_BIN", tmp_path / "lib")
    with pytest.raises(RuntimeError, match="install the Debian package postgresql$"):
        postgres.bin_dir()
    for version in ("9", "15"):
        (tmp_path / "lib" / version / "bin").mkdir(parents=True)
        (tmp_path / "lib" / version / "bin" / "initdb").touch(mode=0o755)
    assert postgres.bin_dir() == tmp_path / "lib" / "15" / "bin"
    (tmp_path / "path").mkdir()
    (tmp_path / "path" / "initdb").symlink_to(tmp_path / "lib" / "9" / "bin" / "initdb")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert postgres.bin_dir() == tmp_path / "lib" / "9" / "bin"


def test_a_model_build_that_cannot_run_is_one_line_naming_the_step_and_where_its_traceback_is(capsys):
    from bitextflow_local.prepare import Step, run_plan

    def build() -> str:
        raise OSError(28, "No space left on device")

    failing = Step("encoder", "encoder", "the encoder", "15 s", build)
    assert run_plan([failing], []) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "bitextflow-local prepare: error: encoder could not be built (OSError: [Errno 28] No space left on device)"
    )
    log_file = Path(line.split("its traceback is in ")[1].split(";")[0])
    assert "Traceback" in log_file.read_text() and line.endswith("fix the cause and run `make models` again")
    log_file.unlink()


def test_a_pair_without_a_dictionary_is_prepared_with_a_line_on_what_its_runs_do(tmp_path, monkeypatch) -> None:
    """en-zh has no Debian dictionary package (apt-cache answers from the machine's package lists): `prepare` goes on."""
    if shutil.which("apt-cache") is None:
        pytest.skip("apt-cache not found: the dictionary step needs Debian's package lists")
    from bitextflow_local.prepare import dictionary_step

    monkeypatch.setenv("BITEXTFLOW_CACHE", str(tmp_path))
    line = dictionary_step("en", "zh").build()
    assert line.startswith("none for en-zh") and "identical tokens" in line


def test_a_pair_other_than_en_es_gets_its_margin_calibration_and_one_without_the_data_goes_on() -> None:
    """The installation guide (fetched by `make models` for the offline domain set) has Japanese, no Arabic."""
    from bitextflow.config import load_pair_config
    from bitextflow_local.prepare import calibration_step, steps_for
    from tests.support import ROOT

    def calibrations(path: Path) -> list[str]:
        return [step.name for step in steps_for(load_pair_config(path)) if step.kind == "margin calibration"]

    assert calibrations(ROOT / "include" / "pairs" / "en-es.yaml") == []  # its calibrations ship
    assert [name.rsplit(" ", 1)[0] for name in calibrations(ROOT / "include" / "pairs" / "examples" / "en-ja.yaml")] == [
        "margin calibration en-ja"
    ]
    line = calibration_step("en", "ar", "onnx-int8").build()
    assert line.startswith("none (too little en-ar parallel text") and "say so" in line


def _metadata_database(path: Path, **connect_args) -> sqlite3.Connection:
    connection = sqlite3.connect(path, **connect_args)
    connection.execute("PRAGMA journal_mode=WAL")  # as Airflow sets it
    return connection


def test_a_savepoint_that_reads_then_writes_waits_for_the_write_lock_instead_of_failing(tmp_path) -> None:
    """`airflow backfill create` failed under load with "database is locked" despite a minute's timeout: a savepoint
    that has read cannot wait for a writer that commits meanwhile. The stack's connections take the lock first."""
    from bitextflow_local.services.sqlite_metadata import SQLITE_CONNECT_ARGS

    path = tmp_path / "airflow.db"
    with _metadata_database(path) as setup:
        setup.execute("CREATE TABLE dag_run (run_id TEXT)")

    plain, other = _metadata_database(path, timeout=60), _metadata_database(path, timeout=0)
    plain.execute("SAVEPOINT backfill")
    plain.execute("SELECT count(*) FROM dag_run").fetchall()
    other.execute("INSERT INTO dag_run VALUES ('scheduled')")
    other.commit()
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):  # at once, not after 60 s
        plain.execute("INSERT INTO dag_run VALUES ('backfill')")
    plain.rollback()

    stack = _metadata_database(path, **SQLITE_CONNECT_ARGS)
    stack.cursor().execute("SAVEPOINT backfill")
    stack.cursor().execute("SELECT count(*) FROM dag_run").fetchall()
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):  # the other writer has to wait its turn
        other.execute("INSERT INTO dag_run VALUES ('scheduled')")
    stack.cursor().execute("INSERT INTO dag_run VALUES ('backfill')")
    stack.cursor().execute("RELEASE SAVEPOINT backfill")
    stack.commit()
    other.execute("INSERT INTO dag_run VALUES ('scheduled')")
    other.commit()
    assert [row for (row,) in other.execute("SELECT run_id FROM dag_run")] == ["scheduled", "backfill", "scheduled"]
