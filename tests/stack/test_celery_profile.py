"""The distributed profile of the local stack (`bitextflow-local services up --executor celery`): PostgreSQL,
Redis and two Celery workers, loopback only; the en-es DAG runs on both workers and releases, byte for byte,
what the LocalExecutor profile releases; a worker killed with SIGKILL in the middle of a run loses and
duplicates nothing. The stack tests share one stack (in a home of their own) and run in file order."""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import psycopg2
import pytest
import redis

from bitextflow.catalog.releases import list_releases
from bitextflow.storage import ObjectStore
from tests.support import ROOT, env_file, free_port

BIN = Path(sys.executable).parent
DAG_ID = "bitextflow__en_es"
RUN_TIMEOUT_S = 10 * 60
WORKERS = {"worker1@bitextflow", "worker2@bitextflow"}
RUN_ID = "manual__celery_profile"
# tests/test_services.py's overrides, with one fetch at a time: concurrent fetches end a 60-page crawl on
# other pages from run to run, and the releases compared here must come from the same pages
OVERRIDES = {"crawl.max_pages": 60, "gate.min_sentence_pairs": 20, "crawl.per_host_concurrency": 1}
# release files that name their run: equal only between runs of the same id
NAME_THE_RUN = {"datasheet.md", "gate.json", "report.html"}
# the task the SIGKILL test kills the worker of, once it runs: half-way through the DAG (tests/test_dag.py); it maps
# over site partitions, and the local site is one (map index 0)
KILLED_TASK = "align_documents/0"


@dataclass
class Stack:
    home: Path
    env: dict[str, str]
    releases: dict[str, dict] = field(default_factory=dict)

    @property
    def state(self) -> Path:
        return self.home / ".local"

    def services(self, *args: str, timeout: int = 420) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "bitextflow-local"), "services", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def up(self, *args: str) -> None:
        result = self.services("up", *args)
        assert result.returncode == 0, result.stderr + (self.state / "stack.log").read_text(errors="replace")[-3000:]

    def stack_json(self) -> dict:
        return json.loads((self.state / "stack.json").read_text())

    def client_env(self) -> dict[str, str]:
        return env_file(self.state / "services.env")

    def api(self) -> httpx.Client:
        """Airflow's REST API as its generated admin."""
        base = self.client_env()["BITEXTFLOW_AIRFLOW_URL"]
        passwords = json.loads((self.state / "airflow" / "simple_auth_manager_passwords.json.generated").read_text())
        token = httpx.post(f"{base}auth/token", json={"username": "admin", "password": passwords["admin"]}, timeout=30)
        token.raise_for_status()
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        return httpx.Client(base_url=f"{base}api/v2/dags/", headers=headers, timeout=30)

    def trigger(self, api: httpx.Client, run_id: str) -> None:
        deadline = time.monotonic() + 180
        while api.get(DAG_ID).status_code == 404:  # until the DAG processor has parsed the pair DAGs
            assert time.monotonic() < deadline, f"{DAG_ID} was not parsed in 180 s"
            time.sleep(2)
        api.patch(DAG_ID, json={"is_paused": False}).raise_for_status()
        conf = {"overrides": {**OVERRIDES, "crawl.seeds": [self.client_env()["BITEXTFLOW_SITE_URL"]]}}
        api.post(f"{DAG_ID}/dagRuns", json={"dag_run_id": run_id, "logical_date": None, "conf": conf}).raise_for_status()

    def wait(self, api: httpx.Client, run_id: str) -> str:
        started = time.monotonic()
        while (state := api.get(f"{DAG_ID}/dagRuns/{run_id}").json()["state"]) not in ("success", "failed"):
            assert time.monotonic() - started < RUN_TIMEOUT_S, f"run {run_id} still {state} after {RUN_TIMEOUT_S} s"
            time.sleep(3)
        print(f"{run_id}: {state} after {time.monotonic() - started:.0f} s")
        return state

    def release(self, run_id: str) -> tuple[int, dict[str, str]]:
        """The sentence pairs and the SHA-256 of each file of ``run_id``'s release, from its manifest."""
        store = ObjectStore.from_env("bitextflow", self.client_env())
        (info,) = [info for info in list_releases(store, "en-es") if info.run_id == run_id]
        manifest = store.get_json(f"releases/en-es/v{info.version}/release.json")
        return info.sentence_pairs, {name: entry["sha256"] for name, entry in manifest["files"].items()}


def stack_processes(stack: Stack) -> list[psutil.Process]:
    supervisor = psutil.Process(stack.stack_json()["pid"])
    return [supervisor, *supervisor.children(recursive=True)]


def new_stack(tmp_path_factory: pytest.TempPathFactory, ports: dict[str, str]) -> Stack:
    home = tmp_path_factory.mktemp("home")
    for name in ("dags", "plugins", "include"):
        (home / name).symlink_to(ROOT / name)
    # a deployment of its own (its own S3 server, same bucket name): its own registry, as a real one has
    env = {**os.environ, **ports, "BITEXTFLOW_HOME": str(home), "BITEXTFLOW_REGISTRY": str(home / "registry")}
    return Stack(home, env)


@pytest.fixture(scope="module")
def ports() -> dict[str, str]:
    """One site port for both profiles: the site's URLs are in the releases compared."""
    return {"BITEXTFLOW_SITE_PORT": str(free_port()), "BITEXTFLOW_AIRFLOW_PORT": str(free_port())}


@pytest.fixture(scope="module")
def celery_stack(tmp_path_factory: pytest.TempPathFactory, ports: dict[str, str]) -> Iterator[Stack]:
    stack = new_stack(tmp_path_factory, ports)
    stack.up("--executor", "celery", "--workers", "2")
    yield stack
    if (stack.state / "stack.json").exists():  # a test failed before the last one stopped it
        stack.services("down", timeout=180)


def test_the_profile_runs_postgres_redis_and_two_workers_on_loopback_with_generated_passwords(celery_stack: Stack) -> None:
    state = celery_stack.stack_json()
    assert state["executor"] == "celery" and set(state["workers"]) == WORKERS
    processes = stack_processes(celery_stack)
    names = [p.name() for p in processes]
    assert "postgres" in names and "redis-server" in names
    assert set(state["workers"].values()) <= {p.pid for p in processes}
    pids = {p.pid for p in processes}
    listening = [c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in pids]
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}, listening

    local = celery_stack.state
    for secret in (local / "airflow.env", local / "redis" / "redis.conf", local / "postgres" / "password"):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600, secret
    settings = env_file(local / "airflow.env")
    assert settings["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    broker_port = int(state["broker"].rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=broker_port).ping()
    assert redis.Redis.from_url(settings["AIRFLOW__CELERY__BROKER_URL"]).ping()
    database_port = int(state["database"].rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(host="127.0.0.1", port=database_port, user="airflow", password="guess", dbname="airflow")

    assert celery_stack.services("up", "--executor", "celery").stdout.startswith("services already running")
    other = celery_stack.services("up")
    assert other.returncode == 1 and "running with the celery executor" in other.stderr


def test_the_en_es_dag_runs_on_both_workers(celery_stack: Stack) -> None:
    with celery_stack.api() as api:
        celery_stack.trigger(api, RUN_ID)
        assert celery_stack.wait(api, RUN_ID) == "success"
        instances = api.get(f"{DAG_ID}/dagRuns/{RUN_ID}/taskInstances").json()["task_instances"]
    ran_on = {ti["hostname"] for ti in instances}
    print({ti["task_id"]: ti["hostname"] for ti in instances})
    assert ran_on == WORKERS
    celery_stack.releases[RUN_ID] = celery_stack.release(RUN_ID)


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(celery_stack: Stack) -> None:
    """SIGKILL to the worker and every process under it (its task processes: the machine is gone) while it runs
    a task; the task's heartbeat stops, Airflow retries it and the run releases what an unkilled run released."""
    run_id = "manual__celery_profile_killed"
    with celery_stack.api() as api:
        celery_stack.trigger(api, run_id)
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while True:
            answer = api.get(f"{DAG_ID}/dagRuns/{run_id}/taskInstances/{KILLED_TASK}")
            # a mapped task instance exists once its upstream has run and Airflow expanded it: 404 until then
            running = answer.json() if answer.status_code != 404 else {"state": None}
            if running["state"] == "running":
                break
            assert running["state"] in (None, "scheduled", "queued"), running
            assert time.monotonic() < deadline
            time.sleep(0.2)
        killed = running["hostname"]
        worker = psutil.Process(celery_stack.stack_json()["workers"][killed])
        for process in [worker, *worker.children(recursive=True)]:
            process.send_signal(signal.SIGKILL)
        assert celery_stack.wait(api, run_id) == "success"
        tries = api.get(f"{DAG_ID}/dagRuns/{run_id}/taskInstances/{KILLED_TASK}/tries").json()["task_instances"]
    print([(t["try_number"], t["state"], t["hostname"]) for t in tries])
    assert (tries[0]["state"], tries[0]["hostname"]) == ("failed", killed)
    assert tries[-1]["state"] == "success" and tries[-1]["try_number"] >= 2
    assert celery_stack.stack_json()["workers"][killed] != worker.pid, "the stack starts a dead worker again"

    pairs, files = celery_stack.release(run_id)
    unkilled_pairs, unkilled_files = celery_stack.releases[RUN_ID]
    assert pairs == unkilled_pairs
    assert {n: h for n, h in files.items() if n not in NAME_THE_RUN} == {
        n: h for n, h in unkilled_files.items() if n not in NAME_THE_RUN
    }


def test_the_profile_stops_cleanly(celery_stack: Stack) -> None:
    processes = stack_processes(celery_stack)
    down = celery_stack.services("down", timeout=180)
    assert down.returncode == 0 and "services stopped" in down.stdout
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert json.loads(celery_stack.services("status").stdout) == {"running": False}


def test_the_release_is_byte_identical_to_the_local_executor_release(
    celery_stack: Stack, tmp_path_factory: pytest.TempPathFactory, ports: dict[str, str]
) -> None:
    """The same run (id, overrides, site) on the LocalExecutor profile, after the Celery one stopped."""
    local_stack = new_stack(tmp_path_factory, ports)
    local_stack.up()
    try:
        assert local_stack.stack_json()["executor"] == "local"
        with local_stack.api() as api:
            local_stack.trigger(api, RUN_ID)
            assert local_stack.wait(api, RUN_ID) == "success"
        pairs, files = local_stack.release(RUN_ID)
        celery_pairs, celery_files = celery_stack.releases[RUN_ID]
        assert pairs == celery_pairs
        assert sorted(name for name in files.keys() | celery_files.keys() if files.get(name) != celery_files.get(name)) == []
    finally:
        local_stack.services("down", timeout=180)


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
