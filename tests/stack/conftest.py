"""The stack tier: the local stack's own processes (`bitextflow-local services up`), shared by every module.

Two deployments run one after the other on the same ports (the site's URLs are in the releases the Celery profile
compares): the LocalExecutor stack, which the UI, browser and scheduler tests use, then the Celery profile. Starting
a stack takes a minute and a run through the real scheduler several, so each stack starts once per session and makes
as few runs as the tests need: on the LocalExecutor stack the demo run (:func:`demo`, which the browser tests look at
and the Celery profile repeats byte for byte) and a backfill; on the Celery profile one run, a worker killed in its
middle. The modules that use the LocalExecutor stack run first and the last of them stops it
(:func:`pytest_collection_modifyitems` orders them), then the Celery profile starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import free_port
from tests.support.stack import COMPARED_OVERRIDES, COMPARED_RUN_ID, Demo, Stack, new_stack, run_demo

#: Modules that use the LocalExecutor stack run before the Celery profile's, which needs the ports back.
CELERY_MODULE = "test_celery_profile.py"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The Celery profile's tests after every other stack test (their order is kept otherwise)."""
    items.sort(key=lambda item: Path(item.path).parent == Path(__file__).parent and Path(item.path).name == CELERY_MODULE)


@pytest.fixture(scope="session")
def ports() -> dict[str, str]:
    """One site port for both profiles: the site's URLs are in the releases compared."""
    return {"BITEXTFLOW_SITE_PORT": str(free_port()), "BITEXTFLOW_AIRFLOW_PORT": str(free_port())}


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory, ports: dict[str, str]) -> Iterator[Stack]:
    """The LocalExecutor stack, as `make demo` starts it; tests/stack/test_services.py's last test stops it."""
    started = new_stack(tmp_path_factory, ports)
    started.up()
    yield started
    started.down()


@pytest.fixture(scope="session")
def demo(stack: Stack) -> Demo:
    """`bitextflow-local demo` on the LocalExecutor stack, as `make demo` runs it but at 60 pages (the run the Celery
    profile repeats): its output says what a user reads, and its run is what the browser tests look at."""
    ran = run_demo(stack, COMPARED_RUN_ID, COMPARED_OVERRIDES)
    precision = re.search(r"release precision: ([\d.]+) of (\d+) sentence pairs", ran.output)
    # the sentence-level figure on the local site's po4a pages, judged over most of the release
    assert precision and float(precision.group(1)) >= 0.95 and int(precision.group(2)) > 0, ran.output
    # the shipped config scores and classifies every pair
    pairs = ran.sentence_pairs
    assert f"margin score: {pairs} of {pairs}; with both sides' domain distributions: {pairs} of {pairs}" in ran.output
    return ran


@pytest.fixture(scope="session")
def local_release(demo: Demo) -> tuple[int, dict[str, str]]:
    """The demo run's release on the LocalExecutor stack, which the Celery profile's must equal byte for byte."""
    return demo.stack.release(demo.run_id)
