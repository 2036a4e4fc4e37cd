"""The demo's local stack: started in its own process groups, loopback only, a real scheduler backfilling a
pair, stopped cleanly. The stack is the session's (tests/stack/conftest.py); these tests run in file order, after
the browser's, and the last one stops it."""

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.support import env_file, wait_for
from tests.support.stack import COMPARED_PAGES, Stack

BIN = Path(sys.executable).parent


def stack_processes(stack: Stack) -> list[psutil.Process]:
    supervisor = psutil.Process(stack.stack_json()["pid"])
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
    # as few pages as the demo run: the behaviour is the scheduler's backfill of a new pair, not the crawl's reach
    overrides = {"crawl.seeds": [site_url], "crawl.max_pages": COMPARED_PAGES, "gate.min_sentence_pairs": 20}
    stack.airflow(
        "backfill", "create", "--dag-id", dag_id, "--from-date", interval, "--to-date", interval,
        "--dag-run-conf", json.dumps({"overrides": overrides}),
    )  # fmt: skip
    stack.airflow("dags", "unpause", dag_id)
    started = time.monotonic()
    runs: list = []

    def backfill_ended() -> bool:
        runs[:] = json_tail(stack.airflow("dags", "list-runs", dag_id, "-o", "json"))
        return bool(runs) and all(run["state"] in ("success", "failed") for run in runs)

    wait_for(backfill_ended, f"the backfill of {dag_id} to end", seen=lambda: f"runs {runs}", poll_s=5)
    print(f"backfill finished in {time.monotonic() - started:.0f} s: {runs}")
    assert [(run["run_id"].split("__")[0], run["state"]) for run in runs] == [("backfill", "success")]  # no scheduled run

    listing = subprocess.run(
        [str(BIN / "bitextflow"), "releases", "list", "--pair", "en-fr", "--json"],
        env={**stack.env, **env_file(stack.state / "services.env")}, capture_output=True, text=True,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr[-2000:]
    releases = json.loads(listing.stdout)
    print(f"en-fr release: {releases}")
    assert [release["run_id"] for release in releases] == [runs[0]["run_id"]] and releases[0]["sentence_pairs"] >= 20


def test_the_local_executor_release_of_the_compared_run_is_recorded(local_release: tuple[int, dict[str, str]]) -> None:
    """The run the Celery profile repeats (tests/stack/test_celery_profile.py), made here while the stack is up."""
    pairs, files = local_release
    released = {"en-es.tmx", "en-es.tsv", "en-es.jsonl", "documents.en.jsonl.gz", "documents.es.jsonl.gz"}
    assert pairs >= 20 and released <= set(files)


def test_services_stop_cleanly(stack: Stack) -> None:
    processes = stack_processes(stack)
    down = stack.services("down")
    assert down.returncode == 0 and "services stopped" in down.stdout
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not (stack.state / "stack.json").exists()
