"""`bitextflow-local demo` (`make demo`): trigger the en-es DAG in the running local Airflow, follow it, report the release.

Uses the `airflow` command line (no Airflow import: it runs beside Airflow, not inside it), the settings the
local stack wrote under .local/, and the local site's truth to measure how many released sentence
pairs come from pages that really are translations of each other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bitextflow.catalog.releases import list_releases, read_release_pairs
from bitextflow.config import load_pair_config
from bitextflow.settings import load_services_env, local_state_dir, project_home
from bitextflow.storage import ObjectStore
from bitextflow_local.localsite import Truth
from bitextflow_local.services.stack import state_dir

PAIR = "en-es"
TIMEOUT_S = 20 * 60


def airflow(*args: str, home: Path) -> str:
    """The `airflow` CLI with the settings the stack runs Airflow with (its executor, its database)."""
    lines = (state_dir(home) / "airflow.env").read_text().splitlines()
    settings = dict(line.split("=", 1) for line in lines if "=" in line)
    command = [str(Path(sys.executable).parent / "airflow"), *args]
    result = subprocess.run(command, env={**os.environ, **settings}, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"bitextflow-local demo: `airflow {' '.join(args)}` failed:\n{result.stderr[-3000:]}")
    return result.stdout


def _json_tail(output: str) -> list | dict:
    """Airflow's CLI prints warnings and log lines before its JSON: take the last line that is JSON."""
    for line in reversed(output.splitlines()):
        if line.startswith(("[{", "{", "[]")):
            return json.loads(line)
    raise SystemExit(f"bitextflow-local demo: no JSON in the Airflow CLI output:\n{output[-2000:]}")


def main() -> int:
    home = project_home()
    load_services_env()
    if not (local_state_dir() / "stack.json").is_file():
        print("bitextflow-local demo: services are not running; start them with `bitextflow-local services up`", file=sys.stderr)
        return 1
    config = load_pair_config(home / "include" / "pairs" / f"{PAIR}.yaml")
    dag_id = config.dag_id
    airflow("dags", "reserialize", home=home)
    airflow("dags", "unpause", dag_id, home=home)
    overrides = {"crawl.seeds": [os.environ["BITEXTFLOW_SITE_URL"]]}
    triggered = _json_tail(
        airflow("dags", "trigger", dag_id, "--conf", json.dumps({"overrides": overrides}), "-o", "json", home=home)
    )
    run_id = (triggered[0] if isinstance(triggered, list) else triggered)["dag_run_id"]
    print(f"triggered {dag_id} run {run_id}; watch it at {os.environ.get('BITEXTFLOW_AIRFLOW_URL', '')}dags/{dag_id}")
    started = time.monotonic()
    state = "queued"
    while state not in ("success", "failed"):
        if time.monotonic() - started > TIMEOUT_S:
            print(f"bitextflow-local demo: run {run_id} still {state} after {TIMEOUT_S // 60} minutes", file=sys.stderr)
            return 1
        time.sleep(10)
        runs = _json_tail(airflow("dags", "list-runs", dag_id, "-o", "json", home=home))
        state = next(run["state"] for run in runs if run["run_id"] == run_id)
        print(f"  {time.monotonic() - started:5.0f} s  run {state}", flush=True)
    if state != "success":
        print(f"bitextflow-local demo: run {run_id} failed; see the task logs in the Airflow UI", file=sys.stderr)
        return 1
    store = ObjectStore.from_env(config.storage.bucket)
    release = next(info for info in list_releases(store, PAIR) if info.run_id == run_id)
    pairs = read_release_pairs(store, release)
    truth = Truth.load(Path(os.environ["BITEXTFLOW_SITE_CACHE"]))
    precision = truth.translation_precision(zip(pairs["url_a"], pairs["url_b"], strict=True))
    print(f"release {release.uri}: v{release.version}, {release.sentence_pairs} sentence pairs")
    print(f"share of sentence pairs from true translation pages: {precision:.3f}")
    print(
        f"finished in {time.monotonic() - started:.0f} s; list releases with `.venv/bin/bitextflow releases list --pair {PAIR} --json`"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
