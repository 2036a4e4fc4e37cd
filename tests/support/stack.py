"""The local stack as the stack tier's tests drive it: one deployment (`bitextflow-local services up`) in a home of
its own, its CLI, its REST API and its releases (the fixtures are tests/stack/conftest.py's)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from bitextflow.catalog.releases import list_releases
from bitextflow.storage import ObjectStore
from tests.support import HANG_S, ROOT, env_file, wait_for

BIN = Path(sys.executable).parent
DAG_ID = "bitextflow__en_es"
#: Pages of the compared run and the backfill: 1,732 en-es and 1,631 en-fr sentence pairs of the shipped config, judged
#: precise by the site's truth, in 69 and 33 s of the pipeline in one process on a cold embedding cache (2-core AMD EPYC
#: with AVX2 only); what costs a stack run its minutes is the scheduler's tasks, not the pages.
COMPARED_PAGES = 12
#: The run both profiles make, released byte for byte alike (the LocalExecutor stack's demo run, the Celery profile's
#: run with a worker killed). It proves orchestration (mapping, retries, recovery, the UI), which a crawl of a few pages
#: shows as well as sixty: the quality of many pages is the integration tier's end-to-end run and bench/'s. One fetch at
#: a time, since concurrent fetches end a short crawl on other pages from run to run.
COMPARED_RUN_ID = "manual__compared"
COMPARED_OVERRIDES = {"crawl.max_pages": COMPARED_PAGES, "gate.min_sentence_pairs": 20, "crawl.per_host_concurrency": 1}


@dataclass
class Stack:
    """One deployment of the local stack in a home of its own."""

    home: Path
    env: dict[str, str]
    releases: dict[str, tuple[int, dict[str, str]]] = field(default_factory=dict)

    @property
    def state(self) -> Path:
        return self.home / ".local"

    def services(self, *args: str, timeout: int = HANG_S) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "bitextflow-local"), "services", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def up(self, *args: str) -> None:
        result = self.services("up", *args)
        assert result.returncode == 0, result.stderr + (self.state / "stack.log").read_text(errors="replace")[-3000:]

    def down(self) -> None:
        if (self.state / "stack.json").exists():  # a test failed before the one that stops it
            self.services("down")

    def stack_json(self) -> dict:
        return json.loads((self.state / "stack.json").read_text())

    def client_env(self) -> dict[str, str]:
        return env_file(self.state / "services.env")

    def airflow(self, *args: str) -> str:
        """The `airflow` CLI with the settings the stack runs Airflow with (its .local/airflow.env)."""
        env = {**self.env, **env_file(self.state / "airflow.env")}
        result = subprocess.run([str(BIN / "airflow"), *args], env=env, capture_output=True, text=True, timeout=HANG_S)
        assert result.returncode == 0, f"airflow {' '.join(args)}: {result.stderr[-3000:]}"
        return result.stdout

    def api(self) -> httpx.Client:
        """Airflow's REST API as its generated admin."""
        base = self.client_env()["BITEXTFLOW_AIRFLOW_URL"]
        passwords = json.loads((self.state / "airflow" / "simple_auth_manager_passwords.json.generated").read_text())
        token = httpx.post(f"{base}auth/token", json={"username": "admin", "password": passwords["admin"]}, timeout=30)
        token.raise_for_status()
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        return httpx.Client(base_url=f"{base}api/v2/dags/", headers=headers, timeout=30)

    def trigger(self, api: httpx.Client, run_id: str) -> None:
        """The compared run of the en-es DAG (:data:`COMPARED_OVERRIDES`) under ``run_id``."""
        wait_for(
            lambda: api.get(DAG_ID).status_code != 404, f"the DAG processor to parse {DAG_ID}",
            seen=lambda: f"GET dags/{DAG_ID} still answers 404 (`airflow dags list-import-errors` says why)", poll_s=2,
        )  # fmt: skip
        api.patch(DAG_ID, json={"is_paused": False}).raise_for_status()
        # as `bitextflow-local demo --set ...` makes it (the overrides are in the release's datasheet, key order too)
        conf = {"overrides": {"crawl.seeds": [self.client_env()["BITEXTFLOW_SITE_URL"]], **COMPARED_OVERRIDES}}
        api.post(f"{DAG_ID}/dagRuns", json={"dag_run_id": run_id, "logical_date": None, "conf": conf}).raise_for_status()

    def wait(self, api: httpx.Client, run_id: str) -> str:
        """The state ``run_id`` ends in, once it ends."""
        started = time.monotonic()

        def ended() -> str | None:
            state = api.get(f"{DAG_ID}/dagRuns/{run_id}").json()["state"]
            return state if state in ("success", "failed") else None

        state = wait_for(ended, f"run {run_id} to end", seen=lambda: task_states(api, run_id), poll_s=3)
        print(f"{run_id}: {state} after {time.monotonic() - started:.0f} s")
        return state

    def release(self, run_id: str) -> tuple[int, dict[str, str]]:
        """The sentence pairs and the SHA-256 of each file of ``run_id``'s release, from its manifest; for the
        monolingual documents, of their lines without the provenance of each page's WARC record (its crawl date,
        file, offset and record id), which a second crawl of the same site gives anew."""
        store = ObjectStore.from_env("bitextflow", self.client_env())
        (info,) = [info for info in list_releases(store, "en-es") if info.run_id == run_id]
        prefix = f"releases/en-es/v{info.version}/"
        digests = {name: entry["sha256"] for name, entry in store.get_json(prefix + "release.json")["files"].items()}
        for name in [name for name in digests if name.startswith("documents.")]:
            lines = [json.loads(line) for line in gzip.decompress(store.get_bytes(prefix + name)).splitlines()]
            content = [{k: v for k, v in line.items() if k not in ("crawl_date", "source")} for line in lines]
            digests[name] = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
        return info.sentence_pairs, digests


def task_states(api: httpx.Client, run_id: str) -> str:
    """Each task instance of ``run_id`` with its state, for a failure message: where a run stands."""
    instances = api.get(f"{DAG_ID}/dagRuns/{run_id}/taskInstances", params={"limit": 1000}).json()["task_instances"]
    states = [f"{ti['task_id']}{'/' + str(ti['map_index']) if ti['map_index'] >= 0 else ''} {ti['state']}" for ti in instances]
    return f"run {run_id}'s tasks: " + ", ".join(sorted(states))


def new_stack(tmp_path_factory: pytest.TempPathFactory, ports: dict[str, str]) -> Stack:
    home = tmp_path_factory.mktemp("home")
    # the project's folders, and heliport's environment, which `make setup` builds in the project (extract asks it)
    for name in ("dags", "plugins", "include", ".venv-heliport"):
        (home / name).symlink_to(ROOT / name)
    # a deployment of its own (its own S3 server, same bucket name): its own registry, as a real one has
    env = {**os.environ, **ports, "BITEXTFLOW_HOME": str(home), "BITEXTFLOW_REGISTRY": str(home / "registry")}
    return Stack(home, env)


@dataclass(frozen=True)
class Demo:
    """The demo run on a stack: `bitextflow-local demo`'s run, its release and its report."""

    stack: Stack
    run_id: str
    report_uri: str
    sentence_pairs: int
    output: str

    @property
    def ui(self) -> str:
        return env_file(self.stack.state / "services.env")["BITEXTFLOW_AIRFLOW_URL"]


def run_demo(stack: Stack, run_id: str, overrides: dict[str, object], timeout_s: int = HANG_S) -> Demo:
    """`bitextflow-local demo` in ``stack``'s home, as `make demo` runs it, as run ``run_id`` with ``overrides``."""
    env = {**stack.env, **env_file(stack.state / "services.env")}
    settings = [item for name, value in overrides.items() for item in ("--set", f"{name}={json.dumps(value)}")]
    result = subprocess.run(
        [str(BIN / "bitextflow-local"), "demo", "--run-id", run_id, *settings],
        env=env, cwd=stack.home, capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    print(result.stdout)
    release = re.search(r"v\d+, (\d+) sentence pairs", result.stdout)
    report = re.search(r"its report, for a browser: (file://\S+)", result.stdout)
    assert f"triggered {DAG_ID} run {run_id};" in result.stdout and release and report, result.stdout
    return Demo(stack, run_id, report.group(1), int(release.group(1)), result.stdout)
