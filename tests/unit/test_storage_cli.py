"""Storage errors a user can act on, and every stage run from the CLI without Airflow.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_storage_cli.py's.
"""

import socket

import pytest

from bitextflow import cli
from bitextflow.config import load_pair_config
from bitextflow.errors import StorageError
from bitextflow.stages.base import RunContext
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectStore, StorageSettings
from tests.support import ROOT


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def crawl_context(settings: StorageSettings) -> RunContext:
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    return run_context(config, ObjectStore(settings, "bitextflow"), "test_errors")


def test_unreachable_endpoint_fails_the_first_task_with_one_line():
    endpoint = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(StorageError) as caught:
        REGISTRY.run(crawl_context(StorageSettings(endpoint, "key", "secret")), "crawl")
    message = str(caught.value)
    assert "\n" not in message
    assert f"cannot reach the S3 endpoint {endpoint}" in message and "BITEXTFLOW_S3_ENDPOINT_URL" in message


def test_validate_command_prints_one_line_per_problem(tmp_path, capsys):
    bad = tmp_path / "en-es.yaml"
    bad.write_text((ROOT / "include" / "pairs" / "en-es.yaml").read_text().replace("target: es", "target: zz"))
    assert cli.main(["validate", str(ROOT / "include" / "pairs" / "en-es.yaml")]) == 0
    assert cli.main(["validate", str(bad)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "unknown language 'zz'" in error and str(bad) in error


def test_run_ids_map_to_keys_one_to_one_and_back() -> None:
    """Two runs never share a prefix (the second would resume the first's crawl), and no component is . or .."""
    from bitextflow.storage.layout import run_prefix, safe_key_part, text_of_key_part

    ids = ["scheduled__2026-11-22T00:00:00+00:00", "scheduled__2026-11-22T00/00/00+00:00", "scheduled__2026-11-22T00_00_00_00_00",
           ".", "..", "~2F", "run ~ id", "ñandú/ü", "cli__20261122T170000"]  # fmt: skip
    parts = [safe_key_part(run_id) for run_id in ids]
    assert len(set(parts)) == len(ids)
    assert all("/" not in part and part not in (".", "..") and not part.startswith(".") for part in parts)
    assert [text_of_key_part(part) for part in parts] == ids
    assert safe_key_part("cli__20261122T170000") == "cli__20261122T170000", "plain run ids read as they are"
    assert not run_prefix("en-es", ids[0]).startswith(run_prefix("en-es", ids[1]))
    with pytest.raises(ValueError, match="empty run id"):
        safe_key_part("")


def test_a_downloaded_key_never_lands_outside_its_folder(tmp_path) -> None:
    from bitextflow.errors import StorageError
    from bitextflow.storage.layout import local_path

    assert local_path(tmp_path, "v1/model/config.json") == (tmp_path / "v1/model/config.json").resolve()
    for hostile in ("../outside.json", "v1/../../outside.json", "/etc/passwd"):
        with pytest.raises(StorageError, match="outside"):
            local_path(tmp_path, hostile)
