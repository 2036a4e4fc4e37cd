"""The stack tier: the local stack's own processes (`bitextflow-local services up`), shared by every module.

Two deployments run one after the other on the same ports (the site's URLs are in the releases the Celery profile
compares): the LocalExecutor stack, which the UI, browser and scheduler tests use, then the Celery profile. Starting
a stack takes a minute, so each starts once per session: the modules that use the LocalExecutor stack run first and
the last of them stops it (:func:`pytest_collection_modifyitems` orders them), then the Celery profile starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import free_port
from tests.support.stack import COMPARED_RUN_ID, Stack, new_stack

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
def local_release(stack: Stack) -> tuple[int, dict[str, str]]:
    """The compared run on the LocalExecutor stack: its release, which the Celery profile's must equal."""
    with stack.api() as api:
        stack.trigger(api, COMPARED_RUN_ID)
        assert stack.wait(api, COMPARED_RUN_ID) == "success"
    return stack.release(COMPARED_RUN_ID)
