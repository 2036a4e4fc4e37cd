"""Shared fixtures: a real SeaweedFS S3 server, the real local multilingual site, an Airflow home.

Nothing here talks to anything but 127.0.0.1. Airflow is configured through the environment before
any test imports it, with its own SQLite database in a temporary AIRFLOW_HOME.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = ROOT.parent / "shared" / "eval"

_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="bitextflow-airflow-home-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(_AIRFLOW_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGBAG_IMPORT_ERROR_TRACEBACKS": "False",
        "GX_ANALYTICS_ENABLED": "false",
        # never pick up the S3 settings of a demo stack running from this checkout
        "BITEXTFLOW_SERVICES_ENV": "",
        # releases of DAG and CLI runs are recorded in a throwaway DVC registry, not the checkout's .local/registry
        "BITEXTFLOW_REGISTRY": str(_AIRFLOW_HOME / "registry"),
    }
)
for _name in ("BITEXTFLOW_S3_ENDPOINT_URL", "BITEXTFLOW_S3_ACCESS_KEY_ID", "BITEXTFLOW_S3_SECRET_ACCESS_KEY"):
    os.environ.pop(_name, None)
# Airflow puts the plugins folder on sys.path when it runs; tests that import the glue need it too.
sys.path.insert(0, str(ROOT / "plugins"))

BUCKET = "bitextflow"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from bitextflow_local.services.seaweed import SeaweedServer

    with SeaweedServer(tmp_path_factory.mktemp("s3"), buckets=[BUCKET]) as server:
        yield server


@pytest.fixture
def s3_env(s3_server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The process environment pointed at the test S3 server (what tasks and the CLI read)."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server.env()


@pytest.fixture
def store(s3_env):
    from bitextflow.storage import ObjectStore

    return ObjectStore.from_env(BUCKET)


@pytest.fixture(scope="session")
def site() -> Iterator:
    """The local multilingual site, built from Debian packages (cached) and served on a free port."""
    from bitextflow_local.localsite import build_site, serve

    built = build_site()
    with serve(built.docroot, port=0) as server:
        server.site = built
        yield server


@pytest.fixture(scope="session")
def truth(site):
    from bitextflow_local.localsite import Truth

    return Truth.load(site.site.cache_dir)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated SQLite metadata database in the tests' AIRFLOW_HOME (about 5 s)."""
    airflow = Path(sys.executable).parent / "airflow"
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy())
    return _AIRFLOW_HOME


@pytest.fixture
def dag_folder(tmp_path: Path, airflow_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder for a test's own DAG files, made a DAG bundle beside the project's dags/ (``dag.test()`` runs
    DAGs of a configured bundle only)."""
    import json

    bundle = "airflow.dag_processing.bundles.local.LocalDagBundle"
    bundles = [
        {"name": "dags-folder", "classpath": bundle, "kwargs": {}},
        {"name": "test-dags", "classpath": bundle, "kwargs": {"path": str(tmp_path)}},
    ]
    monkeypatch.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps(bundles))
    return tmp_path


@pytest.fixture
def pair_config():
    from bitextflow.config import load_pair_config

    return load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1 (for a service a test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a generated settings file (the local stack's ``.env`` files)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def eval_dir(name: str) -> Path:
    """A gold data folder under ../shared/eval, or a skip saying why it is absent."""
    path = EVAL_DIR / name
    if not path.is_dir():
        pytest.skip(f"gold data {path} is absent (it ships beside the repository in CI, not in a user's clone)")
    return path


def cross_shard_duplicates(ctx):
    """The documents a run's deduplicate stage set aside, every partition's (align_documents writes them)."""
    import pandas as pd

    from bitextflow.storage.tables import read_table

    keys = [key for key in ctx.store.list_keys(ctx.key("align_documents", "")) if key.endswith(".cross-shard-duplicates.parquet")]
    return pd.concat([read_table(ctx.store, key) for key in sorted(keys)], ignore_index=True)


def through_partitions(ctx, documents, sentences=None) -> list[str]:
    """``documents`` (and ``sentences``) written as one extract shard, gathered by the partition stage and de-duplicated
    across the run, as document alignment finds them; returns the partitions' documents keys."""
    from bitextflow import records
    from bitextflow.stages.registry import REGISTRY
    from bitextflow.storage.tables import write_table

    sentences = records.SENTENCES.empty_table().to_pandas() if sentences is None else sentences
    write_table(ctx.store, ctx.key("extract", "s.sentences.parquet"), sentences, records.SENTENCES)
    documents_key = write_table(ctx.store, ctx.key("extract", "s.documents.parquet"), documents, records.DOCUMENTS)
    partitions = REGISTRY.run(ctx, "partition", [documents_key])
    REGISTRY.run(ctx, "deduplicate", partitions)
    return partitions
