"""The DVC data registry and `dvc repro`, for real: git + DVC subprocesses, a DVC remote on SeaweedFS.

`dvc get` runs after the registry's DVC cache is deleted, so the files it returns come from S3.


The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_registry.py's.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bitextflow.catalog.registry import DataRegistry


def test_a_token_in_the_registry_url_stays_out_of_errors_and_records(tmp_path: Path) -> None:
    """A git URL with a token (https://user:token@host/...) must not reach XCom, logs or error messages."""
    from bitextflow.errors import StageError
    from bitextflow.storage import StorageSettings
    from bitextflow.text.urls import without_credentials

    assert without_credentials("https://bot:ghp_s3cr3t@git.example/corpora.git") == "https://***@git.example/corpora.git"
    assert without_credentials("https://git.example/corpora.git") == "https://git.example/corpora.git"
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    free = port.getsockname()[1]
    port.close()  # nothing listens there: git fails at once, and its message names the URL
    registry = DataRegistry(
        f"https://bot:ghp_s3cr3t@127.0.0.1:{free}/corpora.git", StorageSettings(None, None, None), "s3://b/dvc", "ns"
    )
    with pytest.raises(StageError) as failure:
        registry.tags()
    assert "ghp_s3cr3t" not in str(failure.value) and f"https://***@127.0.0.1:{free}/corpora.git" in str(failure.value)
