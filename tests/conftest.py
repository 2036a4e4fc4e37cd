"""The fixtures every tier shares: a real SeaweedFS S3 server, the real local multilingual site, an Airflow home.

The suite has three tiers, one folder each (docs/testing.md says which to run when):

- ``tests/unit``: no service at all, no network, no Airflow database: ``make test-quick``, the edit-test loop;
- ``tests/integration``: the real S3 server, the local site, real DAG runs (``dag.test()``), CLI subprocesses;
- ``tests/stack``: the local stack's own processes (scheduler, API server, Celery workers, a browser).

Each test is marked with its tier's name (``pytest -m unit`` selects as the folder does), and a tier may not use a
heavier tier's fixtures: a unit test that asks for the S3 server fails at collection, naming the fixture.

Nothing here talks to anything but 127.0.0.1. Airflow is configured through the environment before
any test imports it, with its own SQLite database in a temporary AIRFLOW_HOME.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.support import BUCKET, ROOT

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
# One embedding cache for the session, shared by its xdist workers (they inherit the controller's environment) and the
# stacks they start: a pipeline run over the local site after the first takes its vectors from it, as a run does on a
# machine that embedded the same pages before; never the user's own cache.
if "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ["BITEXTFLOW_EMBEDDING_CACHE"] = tempfile.mkdtemp(prefix="bitextflow-embedding-cache-")
for _name in ("BITEXTFLOW_S3_ENDPOINT_URL", "BITEXTFLOW_S3_ACCESS_KEY_ID", "BITEXTFLOW_S3_SECRET_ACCESS_KEY"):
    os.environ.pop(_name, None)
# Airflow puts the plugins folder on sys.path when it runs; tests that import the glue need it too.
sys.path.insert(0, str(ROOT / "plugins"))

# tests/unit/test_fuzz.py's hostile inputs, shared among its targets: `make test` runs the ci profile, `make fuzz` the
# fuzz profile (pytest --hypothesis-profile=fuzz); both derandomised, so every run sees the same inputs.
for _name, _inputs in (("ci", 2_500), ("fuzz", 10_000)):
    hypothesis_settings.register_profile(
        _name, max_examples=_inputs, deadline=None, derandomize=True, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )  # fmt: skip
hypothesis_settings.load_profile("ci")

#: The fixtures that start or need a service, by the lightest tier that may use them (a fixture of the stack tier's own
#: conftest is out of reach of the other tiers anyway).
SERVICE_FIXTURES = {"s3_server": "integration", "site": "integration", "airflow_db": "integration"}
TIERS = ("unit", "integration", "stack")


class TierClock:
    """Each tier's wall time, from its first test's setup to its last test's teardown, printed at the end of the run
    (``make test`` and CI logs say where the time went; docs/testing.md keeps the table). Tiers overlap under
    pytest-xdist: the stack tier runs on one worker while the others share the second."""

    def __init__(self) -> None:
        self.spans: dict[str, list[float]] = {}
        self.tests: dict[str, int] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tier = report.nodeid.split("/", 2)[1]
        span = self.spans.setdefault(tier, [report.start, report.stop])
        span[0], span[1] = min(span[0], report.start), max(span[1], report.stop)
        if report.when == "call":
            self.tests[tier] = self.tests.get(tier, 0) + 1

    def pytest_terminal_summary(self, terminalreporter) -> None:
        for tier in (tier for tier in TIERS if tier in self.spans):
            started, stopped = self.spans[tier]
            terminalreporter.write_line(f"tier {tier}: {stopped - started:.0f} s of wall time, {self.tests.get(tier, 0)} tests")


def pytest_configure(config: pytest.Config) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller sees every worker's reports
        config.pluginmanager.register(TierClock(), "bitextflow-tier-clock")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's embedding cache goes with it (the controller's, once every worker and stack has stopped)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        shutil.rmtree(os.environ["BITEXTFLOW_EMBEDDING_CACHE"], ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test with its tier (its folder under tests/) and refuses a test that uses a heavier tier's fixture.
    The heaviest tiers come first: pytest-xdist hands out work in this order (:func:`pytest_xdist_make_scheduler`), so
    that the unit tier's many small modules fill the workers' ends."""
    tests = Path(__file__).parent
    misplaced = []
    for item in items:
        tier = Path(item.path).relative_to(tests).parts[0]
        if tier not in TIERS:
            misplaced.append(f"{item.nodeid}: tests live in one of tests/{{{','.join(TIERS)}}}/")
            continue
        item.add_marker(tier)
        for fixture in getattr(item, "fixturenames", ()):
            needs = SERVICE_FIXTURES.get(fixture)
            if needs is not None and TIERS.index(needs) > TIERS.index(tier):
                misplaced.append(f"{item.nodeid}: uses the fixture {fixture} (a service): move it to tests/{needs}/")
    if misplaced:
        raise pytest.UsageError("tests in the wrong tier:\n" + "\n".join(misplaced))
    items.sort(key=lambda item: -TIERS.index(Path(item.path).relative_to(tests).parts[0]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """How ``make test`` shares the tests among its pytest-xdist workers: a whole module at a time, so that its fixtures
    are made once and its tests keep their order, and the whole stack tier to one worker, since its modules share one
    stack (tests/stack/conftest.py)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndTheStack(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "tests/stack" if module.startswith("tests/stack/") else module

    return ModulesAndTheStack(config, log)


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
