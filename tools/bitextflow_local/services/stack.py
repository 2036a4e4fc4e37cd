"""The local stack for the demo: SeaweedFS (S3), the local multilingual site and Airflow, on 127.0.0.1.

``bitextflow-local services up`` starts one supervisor process in its own session; it runs the three
services and stops them all, cleanly, on SIGTERM (``bitextflow-local services down``). Its state is kept
under ``.local/``:

- ``services.env``  settings for clients (S3 endpoint and generated credentials, site and UI URLs),
  readable by the owner only;
- ``airflow.env``   the Airflow configuration the supervisor started Airflow with (for the CLI);
- ``stack.json``    the supervisor's pid and the service URLs, written once everything is healthy;
- ``stack.log``, ``airflow/<component>.log``, ``s3/weed.log``: logs.

Airflow runs as its four components (SQLite, LocalExecutor, parallelism 4), each in its own process
group, with the API server bound to 127.0.0.1 and no log servers, so nothing listens beyond loopback.
``--executor celery`` is the distributed profile instead: CeleryExecutor on a private PostgreSQL and Redis
with N Celery workers (:mod:`bitextflow_local.services.celery_profile`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from bitextflow_local.services.private import write_private
from bitextflow_local.services.processes import stop_process_group

SITE_PORT = int(os.environ.get("BITEXTFLOW_SITE_PORT", "8765"))
AIRFLOW_PORT = int(os.environ.get("BITEXTFLOW_AIRFLOW_PORT", "8080"))
BUCKET = "bitextflow"
START_TIMEOUT_S = 240
# Started one by one rather than with `airflow standalone`: the scheduler's and triggerer's log
# servers bind every interface and cannot be told otherwise; with LocalExecutor the API server
# reads task logs from disk, so they are not needed.
AIRFLOW_COMPONENTS = {
    "api-server": ["api-server"],
    "scheduler": ["scheduler", "--skip-serve-logs"],
    "dag-processor": ["dag-processor"],
    "triggerer": ["triggerer", "--skip-serve-logs"],
}


LOCAL_EXECUTOR = {
    "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
    "AIRFLOW__CORE__PARALLELISM": "4",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": "bitextflow_local.services.sqlite_metadata.SQLITE_CONNECT_ARGS",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC": "bitextflow_local.services.sqlite_metadata.SQLITE_CONNECT_ARGS",
}


def state_dir(home: Path) -> Path:
    """``<home>/.local``: what :func:`bitextflow.settings.local_state_dir` names when ``home`` is the project home."""
    return home / ".local"


def admin_passwords_file(home: Path) -> Path:
    """Where Airflow's simple auth manager writes the generated password of the stack's user ``admin``."""
    return state_dir(home) / "airflow" / "simple_auth_manager_passwords.json.generated"


def admin_password(home: Path) -> str:
    return json.loads(admin_passwords_file(home).read_text())["admin"]


def airflow_env(home: Path, executor: str = "local") -> dict[str, str]:
    """Airflow settings of the local stack; the Celery profile adds its executor and database (the stack writes
    what it runs with to ``.local/airflow.env``, which the demo's `airflow` CLI calls read)."""
    return {
        **(LOCAL_EXECUTOR if executor == "local" else {}),
        "AIRFLOW_HOME": str(state_dir(home) / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGBAG_IMPORT_ERROR_TRACEBACKS": "False",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(AIRFLOW_PORT),
        # Tasks report to the API server's execution API; its default URL assumes port 8080.
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{AIRFLOW_PORT}/execution/",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
        "GX_ANALYTICS_ENABLED": "false",
        # Arrow's own allocator (mimalloc) kept an extract task 35 MB larger and growing with the shard;
        # malloc gives the memory back (docs/extract.md, "Memory"). Read once, when pyarrow is imported.
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "NO_PROXY": "*",
    }


def _env_lines(values: dict[str, str]) -> str:
    return "".join(f"{name}={value}\n" for name, value in sorted(values.items()))


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own 127.0.0.1 service
            return response.status == 200
    except OSError:
        return False


def _running_supervisor(home: Path) -> dict | None:
    stack_file = state_dir(home) / "stack.json"
    if not stack_file.is_file():
        return None
    state = json.loads(stack_file.read_text())
    try:
        os.kill(state["pid"], 0)
    except ProcessLookupError:
        stack_file.unlink(missing_ok=True)
        return None
    return state


def supervise(home: Path, executor: str, workers: int) -> None:
    """Run the services until SIGTERM or SIGINT; then stop them all (Airflow, site, S3) and exit."""
    from bitextflow_local.localsite import build_site, serve
    from bitextflow_local.services.seaweed import SeaweedServer

    local = state_dir(home)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    s3 = SeaweedServer(local / "s3", buckets=[BUCKET])
    site = build_site()
    site_server = serve(site.docroot, port=SITE_PORT)
    client_env = {
        **s3.env(),
        "BITEXTFLOW_SITE_URL": site_server.base_url,
        "BITEXTFLOW_SITE_CACHE": str(site.cache_dir),
        "BITEXTFLOW_AIRFLOW_URL": f"http://127.0.0.1:{AIRFLOW_PORT}/",
    }
    write_private(local / "services.env", _env_lines(client_env))
    airflow_dir = local / "airflow"
    airflow_dir.mkdir(parents=True, exist_ok=True)
    venv_bin = str(Path(sys.executable).parent)
    components: list[subprocess.Popen] = []
    cluster = None
    try:
        af_env = airflow_env(home, executor)
        if executor == "celery":
            from bitextflow_local.services.celery_profile import CeleryCluster

            cluster = CeleryCluster(local, workers)
            af_env |= cluster.airflow_env()
        write_private(local / "airflow.env", _env_lines(af_env))
        # Airflow components spawn `airflow ...` from PATH
        env = {**os.environ, **client_env, **af_env, "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}"}
        subprocess.run([f"{venv_bin}/airflow", "db", "migrate"], env=env, check=True, capture_output=True)
        for name, args in AIRFLOW_COMPONENTS.items():
            with open(airflow_dir / f"{name}.log", "ab") as log:
                components.append(
                    subprocess.Popen(
                        [f"{venv_bin}/airflow", *args],
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # children ignore SIGTERM: stop the group
                    )  # fmt: skip
                )
        if cluster is not None:
            cluster.start_workers(env, f"{venv_bin}/airflow")
        health = f"http://127.0.0.1:{AIRFLOW_PORT}/api/v2/monitor/health"
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(health):
            exited = [n for n, p in zip(AIRFLOW_COMPONENTS, components, strict=True) if p.poll() is not None]
            if exited or time.monotonic() > deadline or stop.is_set():
                raise RuntimeError(f"Airflow did not become healthy (exited: {exited or 'none'}); see {airflow_dir}/*.log")
            time.sleep(1)
        state = {
            "pid": os.getpid(),
            "s3": s3.endpoint_url,
            "site": site_server.base_url,
            "airflow": client_env["BITEXTFLOW_AIRFLOW_URL"],
            **(cluster.state() if cluster is not None else {"executor": "local"}),
        }
        (local / "stack.json").write_text(json.dumps(state, indent=2))
        print(f"services ready: {json.dumps(state)}", flush=True)
        while not stop.wait(1.0):
            exited = [n for n, p in zip(AIRFLOW_COMPONENTS, components, strict=True) if p.poll() is not None]
            if exited:
                print(f"airflow {exited} exited; stopping the stack", flush=True)
                break
            if cluster is not None and cluster.check_workers():
                state |= cluster.state()
                (local / "stack.json").write_text(json.dumps(state, indent=2))
    finally:
        (local / "stack.json").unlink(missing_ok=True)
        if cluster is not None:
            cluster.stop_workers()
        for process in components:
            stop_process_group(process, grace=30)
        if cluster is not None:
            cluster.stop()
        site_server.stop()
        s3.stop()
        print("services stopped", flush=True)


def up(home: Path, executor: str = "local", workers: int = 2) -> int:
    running = _running_supervisor(home)
    if running:
        if running.get("executor", "local") != executor:
            print(
                f"bitextflow-local: error: services are running with the {running['executor']} executor; "
                "stop them first with `bitextflow-local services down`",
                file=sys.stderr,
            )
            return 1
        print(f"services already running: {json.dumps(running)}")
        return 0
    if executor == "celery":
        from bitextflow_local.services.celery_profile import check_installed

        try:
            check_installed()
        except RuntimeError as exc:
            print(f"bitextflow-local: error: {exc}", file=sys.stderr)
            return 1
    local = state_dir(home)
    local.mkdir(parents=True, exist_ok=True)
    log_path = local / "stack.log"
    with open(log_path, "ab") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "bitextflow_local.services.stack", "supervise", str(home), executor, str(workers)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT_S + 60
    while (state := _running_supervisor(home)) is None:
        if supervisor.poll() is not None or time.monotonic() > deadline:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-25:])
            print(f"bitextflow-local: error: services failed to start; last lines of {log_path}:\n{tail}", file=sys.stderr)
            if supervisor.poll() is None:
                supervisor.terminate()
            return 1
        time.sleep(1)
    print(f"services ready: S3 {state['s3']}, site {state['site']}, Airflow UI {state['airflow']}")
    if executor == "celery":
        print(f"CeleryExecutor: database {state['database']}, broker {state['broker']}, workers {', '.join(state['workers'])}")
    print(f"stop them with `make stop` (Airflow's user admin, password in {admin_passwords_file(home)})")
    return 0


def down(home: Path) -> int:
    state = _running_supervisor(home)
    if not state:
        print("services are not running")
        return 0
    os.kill(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            os.kill(state["pid"], 0)
        except ProcessLookupError:
            print("services stopped")
            return 0
        time.sleep(0.5)
    os.killpg(state["pid"], signal.SIGKILL)
    print("services killed after 90 s")
    return 1


def status(home: Path) -> int:
    state = _running_supervisor(home)
    print(json.dumps(state or {"running": False}, indent=2))
    return 0


def main(action: str, home: Path, executor: str = "local", workers: int = 2) -> int:
    if action == "up":
        return up(home, executor, workers)
    return {"down": down, "status": status}[action](home)


if __name__ == "__main__":
    if sys.argv[1:2] == ["supervise"]:
        supervise(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(main(sys.argv[1], Path(sys.argv[2])))
