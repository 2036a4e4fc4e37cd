"""The distributed profile of the local stack (`bitextflow-local services up --executor celery`): PostgreSQL,
Redis and two Celery workers, loopback only; the en-es DAG runs on both workers and releases, byte for byte,
what the LocalExecutor profile releases; a worker killed with SIGKILL in the middle of a run loses and
duplicates nothing. The profile runs after the LocalExecutor stack's tests, on its ports (tests/stack/conftest.py),
in a home of its own; its tests run in file order."""

import json
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg2
import pytest
import redis

from tests.support import env_file, wait_for
from tests.support.stack import COMPARED_RUN_ID, DAG_ID, Stack, new_stack, task_states

BIN = Path(sys.executable).parent
WORKERS = {"worker1@bitextflow", "worker2@bitextflow"}
# the task the SIGKILL test kills the worker of, once it runs: half-way through the DAG (tests/integration/test_dag.py); it maps
# over site partitions, and the local site is one (map index 0)
KILLED_TASK = "align_documents/0"


def stack_processes(stack: Stack) -> list[psutil.Process]:
    supervisor = psutil.Process(stack.stack_json()["pid"])
    return [supervisor, *supervisor.children(recursive=True)]


@pytest.fixture(scope="session")
def celery_stack(
    tmp_path_factory: pytest.TempPathFactory, ports: dict[str, str], stack: Stack, local_release: tuple[int, dict[str, str]]
) -> Iterator[Stack]:
    """The Celery profile on the LocalExecutor stack's ports, once that stack made the compared run and stopped."""
    stack.down()
    celery = new_stack(tmp_path_factory, ports)
    celery.up("--executor", "celery", "--workers", "2")
    yield celery
    celery.down()


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


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(celery_stack: Stack) -> None:
    """The LocalExecutor stack's demo run again (same id, overrides and site), with SIGKILL to the worker running its
    middle task and every process under it (its task processes: the machine is gone): the task's heartbeat stops,
    Airflow retries it and the run succeeds; the release is compared with the LocalExecutor's below."""
    with celery_stack.api() as api:
        celery_stack.trigger(api, COMPARED_RUN_ID)

        def killed_task_running() -> dict | None:
            answer = api.get(f"{DAG_ID}/dagRuns/{COMPARED_RUN_ID}/taskInstances/{KILLED_TASK}")
            # a mapped task instance exists once its upstream has run and Airflow expanded it: 404 until then
            instance = answer.json() if answer.status_code != 404 else {"state": None}
            assert instance["state"] in (None, "scheduled", "queued", "running"), f"{KILLED_TASK} before its kill: {instance}"
            return instance if instance["state"] == "running" else None

        running = wait_for(
            killed_task_running, f"{KILLED_TASK} running", seen=lambda: task_states(api, COMPARED_RUN_ID), poll_s=0.2
        )
        killed = running["hostname"]
        worker = psutil.Process(celery_stack.stack_json()["workers"][killed])
        for process in [worker, *worker.children(recursive=True)]:
            process.send_signal(signal.SIGKILL)
        assert celery_stack.wait(api, COMPARED_RUN_ID) == "success"
        tries = api.get(f"{DAG_ID}/dagRuns/{COMPARED_RUN_ID}/taskInstances/{KILLED_TASK}/tries").json()["task_instances"]
    print([(t["try_number"], t["state"], t["hostname"]) for t in tries])
    assert (tries[0]["state"], tries[0]["hostname"]) == ("failed", killed)
    assert tries[-1]["state"] == "success" and tries[-1]["try_number"] >= 2
    assert celery_stack.stack_json()["workers"][killed] != worker.pid, "the stack starts a dead worker again"
    celery_stack.releases[COMPARED_RUN_ID] = celery_stack.release(COMPARED_RUN_ID)


def test_the_en_es_dag_runs_on_both_workers(celery_stack: Stack) -> None:
    with celery_stack.api() as api:
        instances = api.get(f"{DAG_ID}/dagRuns/{COMPARED_RUN_ID}/taskInstances").json()["task_instances"]
    ran_on = {ti["hostname"] for ti in instances}
    print({ti["task_id"]: ti["hostname"] for ti in instances})
    assert ran_on == WORKERS


def test_the_profile_stops_cleanly(celery_stack: Stack) -> None:
    processes = stack_processes(celery_stack)
    down = celery_stack.services("down")
    assert down.returncode == 0 and "services stopped" in down.stdout
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert json.loads(celery_stack.services("status").stdout) == {"running": False}


def test_the_release_is_byte_identical_to_the_local_executor_release(
    celery_stack: Stack, local_release: tuple[int, dict[str, str]]
) -> None:
    """The same run (id, overrides, site) on the LocalExecutor profile, made before the Celery profile started: every
    file equal, those that name their run included. A worker killed mid-run lost and duplicated nothing."""
    pairs, files = local_release
    celery_pairs, celery_files = celery_stack.releases[COMPARED_RUN_ID]
    assert pairs == celery_pairs
    assert sorted(name for name in files.keys() | celery_files.keys() if files.get(name) != celery_files.get(name)) == []
