"""The distributed profile of the local stack (``bitextflow-local services up --executor celery``).

Airflow runs with CeleryExecutor on a private PostgreSQL (:mod:`.postgres`, the metadata database and
Celery's result backend) and a private Redis (:mod:`.redis_broker`, the broker), with N Celery workers as
separate processes, each in its own process group: ``airflow celery worker --celery-hostname
worker<i>@bitextflow``. Nothing listens beyond 127.0.0.1: the workers start no log server (every component
reads task logs from the one log folder on this machine), and Flower is not started (it binds every
interface by default).

A worker that dies is started again under its name, as a service manager would; the task it was running
is retried once its heartbeat is ``HEARTBEAT_TIMEOUT_S`` overdue (Airflow's default waits 300 s).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bitextflow_local.services.postgres import PostgresServer, bin_dir
from bitextflow_local.services.processes import stop_process_groups
from bitextflow_local.services.redis_broker import RedisServer, redis_server

#: task processes per worker: 2 workers x 2 keep the LocalExecutor profile's parallelism of 4
WORKER_CONCURRENCY = 2
HEARTBEAT_TIMEOUT_S = 60
#: restarts of one worker within RESTART_WINDOW_S before the stack gives up on it (a worker that cannot start)
MAX_RESTARTS = 3
RESTART_WINDOW_S = 600
WORKER_VARIABLE = "BITEXTFLOW_CELERY_WORKER"


def worker_name(index: int) -> str:
    return f"worker{index}@bitextflow"


def worker_hostname() -> str:
    """``[core] hostname_callable`` of the workers and their tasks: the worker's Celery name. All workers share
    this machine's name, which Airflow would otherwise record as every task instance's ``hostname``."""
    return os.environ[WORKER_VARIABLE]


def check_installed() -> None:
    """Raise, with the Debian package to install, when Redis or PostgreSQL is missing."""
    redis_server()
    bin_dir()


@dataclass
class Worker:
    name: str
    process: subprocess.Popen | None = None
    starts: list[float] = field(default_factory=list)


class CeleryCluster:
    """PostgreSQL and Redis, started now under ``local``; the workers with :meth:`start_workers`."""

    def __init__(self, local: Path, workers: int) -> None:
        self.local = local
        self.postgres = PostgresServer(local / "postgres")
        try:
            self.redis = RedisServer(local / "redis")
        except BaseException:
            self.postgres.stop()
            raise
        self.workers = [Worker(worker_name(i)) for i in range(1, workers + 1)]

    def airflow_env(self) -> dict[str, str]:
        """What the profile changes in the stack's Airflow settings (the SQLite ones are left out there)."""
        return {
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(WORKER_CONCURRENCY * len(self.workers)),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.postgres.url(),
            # derived by Airflow from the one above it would carry require_auth, which asyncpg does not take
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": self.postgres.url("postgresql+asyncpg"),
            "AIRFLOW__CELERY__BROKER_URL": self.redis.url(),
            "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + self.postgres.url(),
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(WORKER_CONCURRENCY),
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT_S),
        }

    def state(self) -> dict[str, object]:
        """For stack.json: where things are and the workers' process ids, no secret."""
        return {
            "executor": "celery",
            "database": f"postgresql://127.0.0.1:{self.postgres.port}/airflow",
            "broker": f"redis://127.0.0.1:{self.redis.port}/0",
            "workers": {worker.name: worker.process.pid if worker.process else None for worker in self.workers},
        }

    def start_workers(self, env: dict[str, str], airflow: str) -> None:
        """Start the workers with the Airflow components' environment ``env`` and the ``airflow`` program."""
        self._worker_env = env
        self._airflow = airflow
        for worker in self.workers:
            self._start(worker)

    def _start(self, worker: Worker) -> None:
        index = worker.name.split("@")[0]
        env = {
            **self._worker_env,
            WORKER_VARIABLE: worker.name,
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": f"{__name__}.worker_hostname",
        }
        with open(self.local / "airflow" / f"{index}.log", "ab") as log:
            worker.process = subprocess.Popen(
                [self._airflow, "celery", "worker", "--celery-hostname", worker.name, "--skip-serve-logs"],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        worker.starts.append(time.monotonic())

    def check_workers(self) -> bool:
        """Start a worker that exited again (True when one did); raise when one keeps exiting."""
        restarted = False
        for worker in self.workers:
            assert worker.process is not None
            if worker.process.poll() is None:
                continue
            recent = [t for t in worker.starts if time.monotonic() - t < RESTART_WINDOW_S]
            if len(recent) > MAX_RESTARTS:
                raise RuntimeError(f"celery worker {worker.name} exited {len(recent)} times in {RESTART_WINDOW_S} s")
            print(f"celery worker {worker.name} exited with {worker.process.returncode}; starting it again", flush=True)
            self._start(worker)
            restarted = True
        return restarted

    def stop_workers(self) -> None:
        """Before the other Airflow components: a warm shutdown lets running tasks end within the grace time."""
        stop_process_groups([worker.process for worker in self.workers if worker.process is not None], grace=30)

    def stop(self) -> None:
        """The broker and the database, once nothing uses them."""
        self.redis.stop()
        self.postgres.stop()
