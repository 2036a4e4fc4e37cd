"""GPU-step dispatch (plugins/bitextflow_airflow/dispatch.py): in-process task or KubernetesPodOperator pod.

No Kubernetes API server exists here (no container runtime, nothing to install one from), so these
tests never claim a pod ran. They build the pod exactly as the operator would submit it (with
``in_cluster=False`` and a dummy kubeconfig that points nowhere), serialise it with the Kubernetes
client into the real manifest, and validate that manifest with ``kubernetes-validate --strict``
against the Kubernetes API schema. The step's command itself is exercised on the in-process path,
which runs it through the same CLI parser and entry point in a real ``dag.test()`` run.


The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_dispatch.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from bitextflow.config import load_pair_config
from bitextflow.errors import ConfigError
from tests.support import ROOT

KUBERNETES_VERSION = "1.32.0"  # kubectl on the image is 1.32
IMAGE = "registry.example.org/bitextflow/gpu-worker:0.1.0"
SECRET_VALUE = "s3cr3t-value-that-must-never-appear"
RUN_ID = "manual__2026-11-22T00:00:00+00:00"
OVERRIDES = {"score.max_length_ratio": 2.0}
DUMMY_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: nobody
  user: {token: not-a-real-token}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
"""


def kubernetes_config(tmp_path: Path, **gpu):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(DUMMY_KUBECONFIG)
    settings = {
        "gpu.mode": "kubernetes",
        "gpu.image": IMAGE,
        "gpu.namespace": "corpora",
        "gpu.gpus": 2,
        "gpu.node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "gpu.tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute", "toleration_seconds": 300},
        ],
        "gpu.cpu": "4",
        "gpu.memory": "24Gi",
        "gpu.s3_secret": "corpora-s3",
        "gpu.service_account": "bitextflow-worker",
        "gpu.in_cluster": False,
        "gpu.config_file": str(kubeconfig),
        **{f"gpu.{name}": value for name, value in gpu.items()},
    }
    return load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(settings)


def build_manifest(config, stage: str = "score") -> dict:
    from airflow.sdk import DAG

    from bitextflow_airflow.dispatch import gpu_step

    with DAG("dispatch_test", start_date=datetime(2026, 1, 1), schedule=None):
        operator = gpu_step(stage, config)
    return manifest_of(operator)


def manifest_of(operator) -> dict:
    """The pod a KubernetesPodOperator would submit for run RUN_ID with OVERRIDES, as a manifest."""
    from kubernetes.client import ApiClient

    operator.render_template_fields({"run_id": RUN_ID, "params": {"overrides": OVERRIDES}})
    return ApiClient().sanitize_for_serialization(operator.build_pod_request_obj())


def validate_strict(manifest: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(manifest))
    validator = Path(sys.executable).parent / "kubernetes-validate"
    return subprocess.run(
        [str(validator), "--strict", "--kubernetes-version", KUBERNETES_VERSION, str(path)],
        capture_output=True, text=True,
    )  # fmt: skip


def test_pod_manifest_is_valid_and_carries_gpu_placement(tmp_path, monkeypatch):
    # A credential in the worker's environment must not leak into the spec: the pod reads the secret.
    monkeypatch.setenv("BITEXTFLOW_S3_SECRET_ACCESS_KEY", SECRET_VALUE)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_VALUE)
    manifest = build_manifest(kubernetes_config(tmp_path))

    result = validate_strict(manifest, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed for resource pod/bitextflow-en-es-score-" in result.stdout and "against version 1.32" in result.stdout

    assert (manifest["apiVersion"], manifest["kind"]) == ("v1", "Pod")
    assert manifest["metadata"]["namespace"] == "corpora"
    assert manifest["metadata"]["labels"]["bitextflow/stage"] == "score"
    spec = manifest["spec"]
    (container,) = spec["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["bitextflow"]
    assert container["args"][:5] == ["score", "--pair", "en-es", "--run-id", RUN_ID]
    assert container["args"][5] == "--overrides" and json.loads(container["args"][6]) == OVERRIDES
    # the CLI in the image parses exactly these arguments
    from bitextflow import cli

    parsed = cli.build_parser().parse_args(container["args"])
    assert (parsed.stage, parsed.pair, parsed.run_id, cli.run_overrides(parsed)) == ("score", "en-es", RUN_ID, OVERRIDES)
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "2", "memory": "24Gi"}
    assert container["resources"]["requests"] == {"cpu": "4", "memory": "24Gi"}
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute", "tolerationSeconds": 300},
    ]
    assert spec["serviceAccountName"] == "bitextflow-worker"
    assert spec["restartPolicy"] == "Never"

    env = {item["name"]: item for item in container["env"]}
    for name in ("BITEXTFLOW_S3_ACCESS_KEY_ID", "BITEXTFLOW_S3_SECRET_ACCESS_KEY", "BITEXTFLOW_S3_ENDPOINT_URL"):
        assert "value" not in env[name]
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "corpora-s3"
        assert env[name]["valueFrom"]["secretKeyRef"]["key"] == name
    assert SECRET_VALUE not in json.dumps(manifest)


def test_cpu_only_pod_has_no_gpu_limit_and_stays_valid(tmp_path):
    manifest = build_manifest(kubernetes_config(tmp_path, gpus=0, node_selector={}, tolerations=[]), stage="classify")
    assert validate_strict(manifest, tmp_path).returncode == 0
    (container,) = manifest["spec"]["containers"]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    assert container["args"][0] == "classify"
    assert not manifest["spec"].get("nodeSelector") and not manifest["spec"].get("tolerations")


def test_with_a_domain_classifier_on_kubernetes_classify_is_one_valid_gpu_pod(tmp_path):
    """The pair DAG's classify stage with a classifier: the pod runs ``bitextflow classify`` for the run, between the
    score shards and ``classify_outputs`` (which hands each shard's key to the monolingual stage, then the gate)."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

    from bitextflow_airflow.pair_dag import build_pair_dag

    config = kubernetes_config(tmp_path).with_overrides({"domain.classifier": "latest"})
    dag = build_pair_dag(config, ROOT / "include" / "pairs" / "en-es.yaml")
    pod = dag.get_task("classify")
    assert isinstance(pod, KubernetesPodOperator)
    assert pod.upstream_task_ids == {"score"} and pod.downstream_task_ids == {"classify_outputs"}
    assert dag.get_task("classify_outputs").downstream_task_ids == {"monolingual_plan"}

    manifest = manifest_of(pod)
    result = validate_strict(manifest, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (container,) = manifest["spec"]["containers"]
    assert container["args"][:5] == ["classify", "--pair", "en-es", "--run-id", RUN_ID]
    assert container["image"] == IMAGE and container["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert manifest["metadata"]["labels"]["bitextflow/stage"] == "classify"


def test_on_kubernetes_embed_is_one_valid_gpu_pod_between_document_and_sentence_alignment(tmp_path):
    """The run's one embedding of each sentence is the GPU's work: one pod embeds every document-pair shard (the model
    loaded once, large batches), then ``embed_outputs`` checks each shard's vectors and hands its key on."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

    from bitextflow_airflow.pair_dag import build_pair_dag

    dag = build_pair_dag(kubernetes_config(tmp_path), ROOT / "include" / "pairs" / "en-es.yaml")
    pod = dag.get_task("embed")
    assert isinstance(pod, KubernetesPodOperator)
    assert pod.upstream_task_ids == {"align_documents"} and pod.downstream_task_ids == {"embed_outputs"}
    assert dag.get_task("embed_outputs").downstream_task_ids == {"align_sentences"}
    manifest = manifest_of(pod)
    assert validate_strict(manifest, tmp_path).returncode == 0
    (container,) = manifest["spec"]["containers"]
    assert container["args"][:5] == ["embed", "--pair", "en-es", "--run-id", RUN_ID]


def test_validator_rejects_a_broken_manifest(tmp_path):
    """The check is not vacuous: a misspelt field fails --strict validation."""
    manifest = build_manifest(kubernetes_config(tmp_path))
    manifest["spec"]["containers"][0]["imagee"] = IMAGE
    result = validate_strict(manifest, tmp_path)
    assert result.returncode != 0
    assert "imagee" in result.stdout + result.stderr


def test_default_mode_is_an_in_process_task():
    from airflow.sdk import DAG
    from airflow.sdk.bases.decorator import DecoratedOperator

    from bitextflow_airflow.dispatch import gpu_step

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    assert config.gpu.mode == "in-process"
    with DAG("dispatch_default", start_date=datetime(2026, 1, 1), schedule=None):
        operator = gpu_step("classify", config, retries=0)
    assert isinstance(operator, DecoratedOperator)
    assert (operator.task_id, operator.retries) == ("classify", 0)


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        ({"mode": "kubernetes"}, "mode kubernetes needs gpu.image"),
        ({"tolerations": [{"operator": "Exists", "value": "x"}]}, "operator Exists takes no value"),
        ({"tolerations": [{"operator": "Equal", "value": "x"}]}, "operator Equal needs a key"),
        ({"tolerations": [{"key": "k", "effect": "NoSchedule", "toleration_seconds": 5}]}, "only to effect NoExecute"),
        ({"tolerations": [{"key": "k", "effect": "Sometimes"}]}, "gpu.tolerations.0.effect"),
        ({"memory": "lots"}, "gpu.memory"),
        ({"gpus": -1}, "gpu.gpus"),
        ({"namespace": "Not_A_Name"}, "gpu.namespace"),
    ],
)
def test_invalid_gpu_section_is_one_line(tmp_path, gpu, expected):
    data = yaml.safe_load((ROOT / "include" / "pairs" / "en-es.yaml").read_text())
    data["gpu"] = gpu
    path = tmp_path / "en-es.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as caught:
        load_pair_config(path)
    assert "\n" not in str(caught.value) and expected in str(caught.value)


def test_unknown_step_fails_at_parse_time():
    from bitextflow_airflow.dispatch import gpu_step

    with pytest.raises(ConfigError, match="unknown stage 'rescore'"):
        gpu_step("rescore", load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml"))


def test_pod_without_an_overrides_param_passes_an_empty_object(tmp_path):
    from airflow.sdk import DAG

    from bitextflow_airflow.dispatch import gpu_step

    with DAG("dispatch_no_params", start_date=datetime(2026, 1, 1), schedule=None):
        operator = gpu_step("classify", kubernetes_config(tmp_path))
    operator.render_template_fields({"run_id": RUN_ID, "params": {}})
    assert operator.arguments[-2:] == ["--overrides", "{}"]


@pytest.mark.parametrize("value", ["[1, 2]", "not json"])
def test_cli_overrides_must_be_a_json_object(value):
    from bitextflow import cli

    parsed = cli.build_parser().parse_args(["score", "--pair", "en-es", "--run-id", "r", "--overrides", value])
    with pytest.raises(ConfigError, match="--overrides .*expected a JSON object"):
        cli.run_overrides(parsed)


def test_cli_set_wins_over_overrides():
    from bitextflow import cli

    argv = ["score", "--pair", "en-es", "--run-id", "r", "--overrides", '{"score.max_length_ratio": 2, "crawl.max_pages": 5}']
    parsed = cli.build_parser().parse_args([*argv, "--set", "score.max_length_ratio=3"])
    config = cli.pair_config(parsed)
    assert (config.score.max_length_ratio, config.crawl.max_pages) == (3, 5)


def test_a_runs_overrides_cannot_reach_what_the_workers_trust(tmp_path):
    """Whoever may trigger a DAG sets its overrides: the address guard, storage, registries, model folders and
    images stay as the pair's YAML says (a run could otherwise aim the crawler at a metadata address with the
    guard off, or push releases with the workers' credentials to a remote of its choice)."""
    from bitextflow import cli
    from bitextflow.config import load_pair_config
    from bitextflow_airflow.dispatch import run_in_process

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    hostile = [
        {"crawl.allow_private_addresses": ["0.0.0.0/0"]}, {"storage.bucket": "theirs"}, {"release.dvc_remote": "s3://theirs/x"},
        {"release.registry": "https://evil.example/r.git"}, {"domain.classifier": "/tmp/their-model"},
        {"crawl": {"allow_private_addresses": ["0.0.0.0/0"]}}, {"gpu.image": "their/image"}, {"crawl.warcs": ["s3://other/"]},
    ]  # fmt: skip
    for overrides in hostile:
        (name,) = overrides
        with pytest.raises(ConfigError, match=rf"override '{name}': only the pair's YAML may set this"):
            config.with_run_overrides(overrides)
        with pytest.raises(ConfigError, match="only the pair's YAML"):
            run_in_process("score", config, "r", overrides)
        argv = ["score", "--pair", "en-es", "--run-id", "r", "--overrides", json.dumps(overrides)]
        with pytest.raises(ConfigError, match="only the pair's YAML"):
            cli.pair_config(cli.build_parser().parse_args(argv))
    allowed = config.with_run_overrides(
        {"crawl.max_pages": 7, "crawl.seeds": ["http://127.0.0.1:9/"], "gate.min_sentence_pairs": 1}
    )
    assert allowed.crawl.max_pages == 7
    # the operator's own --set may change anything
    assert (
        cli.pair_config(
            cli.build_parser().parse_args(["score", "--pair", "en-es", "--run-id", "r", "--set", "storage.bucket=mine"])
        ).storage.bucket
        == "mine"
    )
