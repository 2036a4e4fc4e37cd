"""`bitextflow-local demo` (`make demo`): trigger a pair's DAG (en-es unless a pair config is given) in the running
local Airflow, follow it, report the release and save its HTML report for a browser.

Talks to Airflow through its REST API as the stack's generated admin (no Airflow import: it runs beside Airflow,
not inside it; and no `airflow` CLI, each call of which starts an interpreter that imports Airflow: seconds, on
2 cores, that added up to a minute of the demo), reads the settings the local stack wrote under .local/, and uses
the local site's truth to measure how many released sentence pairs come from pages that really are translations
of each other and, on the po4a-translated pages whose blocks pair by position, how many join corresponding blocks
(:mod:`bitextflow_local.localsite.block_truth`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import httpx

from bitextflow.catalog.releases import list_releases, read_release_records
from bitextflow.config import load_pair_config
from bitextflow.settings import load_services_env, local_state_dir, project_home
from bitextflow.stages.base import RunContext
from bitextflow.storage import ObjectStore
from bitextflow_local.localsite import Truth
from bitextflow_local.localsite.block_truth import judge_release
from bitextflow_local.localsite.paths import DOCROOT_DIRNAME
from bitextflow_local.services.report import save_report
from bitextflow_local.services.stack import admin_password

DEMO_PAIR_CONFIG = Path("include") / "pairs" / "en-es.yaml"
TIMEOUT_S = 20 * 60
PARSE_TIMEOUT_S = 3 * 60
POLL_S = 5


def airflow_api(base_url: str, home: Path) -> httpx.Client:
    """Airflow's REST API (``<base_url>api/v2/``) as the stack's user ``admin``."""
    login = {"username": "admin", "password": admin_password(home)}
    token = httpx.post(f"{base_url}auth/token", json=login, timeout=30)
    token.raise_for_status()
    return httpx.Client(
        base_url=f"{base_url}api/v2/", headers={"Authorization": f"Bearer {token.json()['access_token']}"}, timeout=30
    )


def wait_until_parsed(api: httpx.Client, dag_id: str) -> None:
    """Until the DAG processor has parsed ``dag_id``; a file that fails to parse stops the demo with its error."""
    deadline = time.monotonic() + PARSE_TIMEOUT_S
    while api.get(f"dags/{dag_id}").status_code == 404:
        errors = api.get("importErrors").raise_for_status().json()["import_errors"]
        if errors:
            raise SystemExit(f"bitextflow-local demo: the DAG files do not parse: {errors[0]['stack_trace'].strip()[-2000:]}")
        if time.monotonic() > deadline:
            raise SystemExit(
                f"bitextflow-local demo: {dag_id} was not parsed in {PARSE_TIMEOUT_S} s; see .local/airflow/dag-processor.log"
            )
        time.sleep(2)


def progress(api: httpx.Client, dag_id: str, run_id: str) -> str:
    """``12 of 27 tasks done, running: extract, score``: the run's task instances (mapped ones each count)."""
    instances = api.get(f"dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 1000}).raise_for_status().json()
    states = [(ti["task_id"], ti["state"]) for ti in instances["task_instances"]]
    done = sum(state in ("success", "skipped") for _, state in states)
    running = sorted({task for task, state in states if state == "running"})
    return f"{done} of {len(states)} tasks done" + (f", running: {', '.join(running)}" if running else "")


def main(pair_config: Path | None = None, run_id: str | None = None, overrides: dict[str, object] | None = None) -> int:
    """Run ``pair_config``'s DAG (default :data:`DEMO_PAIR_CONFIG`, relative to the project home) to its release, as a run
    named ``run_id`` (default: Airflow's) with ``overrides`` besides the local site's seed (a run's overrides)."""
    home = project_home()
    load_services_env()
    if not (local_state_dir() / "stack.json").is_file():
        print("bitextflow-local demo: services are not running; start them with `bitextflow-local services up`", file=sys.stderr)
        return 1
    config = load_pair_config(home / (pair_config or DEMO_PAIR_CONFIG))
    dag_id = config.dag_id
    ui = os.environ["BITEXTFLOW_AIRFLOW_URL"]
    with airflow_api(ui, home) as api:
        wait_until_parsed(api, dag_id)
        api.patch(f"dags/{dag_id}", json={"is_paused": False}).raise_for_status()
        conf = {"overrides": {"crawl.seeds": [os.environ["BITEXTFLOW_SITE_URL"]], **(overrides or {})}}
        request = {"logical_date": None, "conf": conf} | ({"dag_run_id": run_id} if run_id else {})
        triggered = api.post(f"dags/{dag_id}/dagRuns", json=request).raise_for_status()
        run_id = triggered.json()["dag_run_id"]
        print(f"triggered {dag_id} run {run_id}; watch it at {ui}dags/{dag_id}", flush=True)
        started = time.monotonic()
        state, shown = "queued", ""
        while state not in ("success", "failed"):
            if time.monotonic() - started > TIMEOUT_S:
                print(f"bitextflow-local demo: run {run_id} still {state} after {TIMEOUT_S // 60} minutes", file=sys.stderr)
                return 1
            time.sleep(POLL_S)
            state = api.get(f"dags/{dag_id}/dagRuns/{run_id}").raise_for_status().json()["state"]
            line = f"run {state}: {progress(api, dag_id, run_id)}"
            if line != shown:  # a line when something changed, not one per poll
                print(f"  {time.monotonic() - started:5.0f} s  {line}", flush=True)
                shown = line
    if state != "success":
        print(f"bitextflow-local demo: run {run_id} failed; see the task logs in the Airflow UI", file=sys.stderr)
        return 1
    store = ObjectStore.from_env(config.storage.bucket)
    release = next(info for info in list_releases(store, config.pair) if info.run_id == run_id)
    pairs = read_release_records(store, release)  # every column: texts and URLs, scores, domain distributions
    site_cache = Path(os.environ["BITEXTFLOW_SITE_CACHE"])
    truth = Truth.load(site_cache)
    page_precision = truth.translation_precision(zip(pairs["url_a"], pairs["url_b"], strict=True))
    figures = judge_release(RunContext(config, store, run_id), site_cache / DOCROOT_DIRNAME, truth, pairs)
    print(f"release {release.uri}: v{release.version}, {release.sentence_pairs} sentence pairs")
    print(f"share of sentence pairs from true translation pages: {page_precision:.3f}")
    scored = int(pairs["margin_score"].notna().sum())
    classified = int((pairs["domain_probs_a"].astype(bool) & pairs["domain_probs_b"].astype(bool)).sum())
    print(
        f"pairs with a margin score: {scored} of {len(pairs)}; with both sides' domain distributions: {classified} of {len(pairs)}"
    )
    print(
        f"release precision: {figures['precision']:.3f} of {figures['judged']} sentence pairs on po4a-translated pages "
        f"join corresponding blocks ({figures['unjudged_page'] + figures['unlocated']} not judged); "
        f"{figures['yield']:.3f} pairs per translated block"
    )
    print(f"its report, for a browser: {save_report(store, release).resolve().as_uri()}")
    print(
        f"finished in {time.monotonic() - started:.0f} s; list releases with `.venv/bin/bitextflow releases list --pair {config.pair} --json`"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
