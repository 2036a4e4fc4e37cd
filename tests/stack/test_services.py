"""The demo's local stack: started in its own process groups, loopback only, a real scheduler backfilling a
pair, stopped cleanly. The tests share one stack (it takes a minute to start) and run in file order."""

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.support import ROOT, env_file, free_port

BIN = Path(sys.executable).parent
BACKFILL_TIMEOUT_S = 15 * 60


@dataclass
class Stack:
    home: Path
    env: dict[str, str]

    @property
    def state(self) -> Path:
        return self.home / ".local"

    def services(self, action: str, timeout: int = 420) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "bitextflow-local"), "services", action], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def airflow(self, *args: str) -> str:
        """The `airflow` CLI with the settings the stack runs Airflow with (its .local/airflow.env)."""
        env = {**self.env, **env_file(self.state / "airflow.env")}
        result = subprocess.run([str(BIN / "airflow"), *args], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"airflow {' '.join(args)}: {result.stderr[-3000:]}"
        return result.stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("home")
    for name in ("dags", "plugins", "include"):
        (home / name).symlink_to(ROOT / name)
    env = {
        **os.environ,
        "BITEXTFLOW_HOME": str(home),
        "BITEXTFLOW_SITE_PORT": str(free_port()),
        "BITEXTFLOW_AIRFLOW_PORT": str(free_port()),
        # a deployment of its own (its own S3 server, same bucket name): its own registry, as a real one has
        "BITEXTFLOW_REGISTRY": str(home / "registry"),
    }
    started = Stack(home, env)
    up = started.services("up")
    assert up.returncode == 0, up.stderr + (home / ".local" / "stack.log").read_text(errors="replace")[-3000:]
    yield started
    if (started.state / "stack.json").exists():  # a test failed before the last one stopped it
        started.services("down", timeout=180)


def stack_processes(stack: Stack) -> list[psutil.Process]:
    supervisor = psutil.Process(json.loads((stack.state / "stack.json").read_text())["pid"])
    return [supervisor, *supervisor.children(recursive=True)]


def test_services_listen_on_loopback_only(stack: Stack) -> None:
    processes = stack_processes(stack)
    assert len({p.pid for p in processes}) >= 6, "supervisor, weed and four Airflow components"
    listening = [
        c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in {p.pid for p in processes}
    ]
    assert listening
    assert {c.laddr.ip for c in listening} <= {"127.0.0.1", "::1"}, listening
    assert stat.S_IMODE((stack.state / "services.env").stat().st_mode) == 0o600
    assert stack.services("up").stdout.startswith("services already running")


def json_tail(output: str) -> list | dict:
    """Airflow's CLI prints log lines before its JSON."""
    return json.loads(next(line for line in reversed(output.splitlines()) if line.startswith(("[", "{"))))


def test_a_new_pair_is_backfilled_by_the_scheduler(stack: Stack) -> None:
    """README "Adding a language pair": en-fr's YAML and `airflow backfill create`, run by the real scheduler
    (LocalExecutor), publish a release. The backfilled interval is the one the scheduler would run next, so
    unpausing the DAG (the scheduler runs no task of a paused DAG) adds no run of its own."""
    dag_id = "bitextflow__en_fr"
    site_url = env_file(stack.state / "services.env")["BITEXTFLOW_SITE_URL"]
    stack.airflow("dags", "reserialize")
    interval = stack.airflow("dags", "next-execution", dag_id).strip().splitlines()[-1]
    overrides = {"crawl.seeds": [site_url], "crawl.max_pages": 60, "gate.min_sentence_pairs": 20}
    stack.airflow(
        "backfill", "create", "--dag-id", dag_id, "--from-date", interval, "--to-date", interval,
        "--dag-run-conf", json.dumps({"overrides": overrides}),
    )  # fmt: skip
    stack.airflow("dags", "unpause", dag_id)
    started = time.monotonic()
    runs: list = []
    while not runs or any(run["state"] not in ("success", "failed") for run in runs):
        assert time.monotonic() - started < BACKFILL_TIMEOUT_S, f"backfill still running: {runs}"
        time.sleep(10)
        runs = json_tail(stack.airflow("dags", "list-runs", dag_id, "-o", "json"))
    print(f"backfill finished in {time.monotonic() - started:.0f} s: {runs}")
    assert [(run["run_id"].split("__")[0], run["state"]) for run in runs] == [("backfill", "success")]  # no scheduled run

    listing = subprocess.run(
        [str(BIN / "bitextflow"), "releases", "list", "--pair", "en-fr", "--json"],
        env={**stack.env, **env_file(stack.state / "services.env")}, capture_output=True, text=True,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr[-2000:]
    releases = json.loads(listing.stdout)
    assert [release["run_id"] for release in releases] == [runs[0]["run_id"]] and releases[0]["sentence_pairs"] >= 20


def test_services_stop_cleanly(stack: Stack) -> None:
    processes = stack_processes(stack)
    down = stack.services("down", timeout=180)
    assert down.returncode == 0 and "services stopped" in down.stdout
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not (stack.state / "stack.json").exists()


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
