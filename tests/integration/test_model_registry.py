"""Models in the DVC data registry, for real (git + DVC subprocesses, the DVC remote on SeaweedFS), as releases are
in tests/integration/test_registry.py: each model version is tagged ``model-<name>-v<N>`` and ``dvc get`` returns exactly its
files after the registry's DVC cache is deleted, so they come from S3.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from pathlib import Path

import pytest

from bitextflow.catalog.registry import DataRegistry, model_tag
from bitextflow.config import load_pair_config
from bitextflow.errors import StageError
from bitextflow.storage import ObjectStore
from tests.support import ROOT


def tree_hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


def model_folder(path: Path, version: int) -> Path:
    """A folder shaped like a bicleaner model: its metadata and a nested file."""
    (path / "vocab").mkdir(parents=True)
    (path / "model.h5").write_bytes(bytes(range(256)) * 40)
    (path / "vocab" / "spm.vocab").write_text("▁the\t-1.0\n▁el\t-1.2\n", encoding="utf-8")
    (path / "bitextflow-model.json").write_text(json.dumps({"version": version}), encoding="utf-8")
    return path


def registry_settings(store: ObjectStore, registry: Path) -> dict[str, str]:
    """The ``release`` section pointing at a throwaway registry whose DVC remote is a fresh prefix of the bucket."""
    return {"release.registry": str(registry), "release.dvc_remote": f"s3://{store.bucket}/dvc-{uuid.uuid4().hex[:8]}"}


def test_a_model_version_is_tagged_and_dvc_get_returns_exactly_it(store: ObjectStore, tmp_path: Path) -> None:
    remote = f"s3://{store.bucket}/dvc-{uuid.uuid4().hex[:8]}"
    registry = DataRegistry(str(tmp_path / "registry"), store.settings, remote, "ns")
    first, second = model_folder(tmp_path / "m1", 1), model_folder(tmp_path / "m2", 2)
    (second / "model.h5").write_bytes(b"retrained")

    entries = [registry.record_model("bicleaner-en-es", version, folder) for version, folder in ((1, first), (2, second))]
    assert [e.tag for e in entries] == ["ns/model-bicleaner-en-es-v1", "ns/model-bicleaner-en-es-v2"]
    assert all(e.recorded for e in entries)
    assert (
        entries[1].get_command
        == f"dvc get {tmp_path / 'registry'} ns/models/bicleaner-en-es/v2 --rev ns/model-bicleaner-en-es-v2"
    )
    retried = registry.record_model("bicleaner-en-es", 1, first)
    assert not retried.recorded and retried.commit == entries[0].commit
    assert registry.tags() == ["ns/model-bicleaner-en-es-v1", "ns/model-bicleaner-en-es-v2"]
    prefix = remote.removeprefix(f"s3://{store.bucket}/")
    assert store.list_keys(prefix + "/"), "dvc push stored nothing on the S3 remote"

    shutil.rmtree(tmp_path / "registry" / ".dvc" / "cache")  # what dvc get returns must come from S3
    for entry, folder in zip(entries, (first, second), strict=True):
        got = registry.get(entry.path, entry.tag, tmp_path / f"got-{entry.tag}")
        assert tree_hashes(got) == tree_hashes(folder)


def test_a_missing_model_folder_is_one_clear_error(store: ObjectStore, tmp_path: Path) -> None:
    registry = DataRegistry(str(tmp_path / "registry"), store.settings, f"s3://{store.bucket}/dvc", "ns")
    with pytest.raises(StageError, match=r"model folder .*absent does not exist; build or train the model"):
        registry.record_model("bicleaner-en-es", 1, tmp_path / "absent")


def test_the_bicleaner_model_is_recorded_under_its_pairs_registry_and_version(store: ObjectStore, tmp_path: Path) -> None:
    from bitextflow.catalog.models import record_bicleaner_model

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        registry_settings(store, tmp_path / "registry")
    )
    model = model_folder(tmp_path / "bicleaner", 7)
    entry = record_bicleaner_model(config, store.settings, model)
    assert (entry.tag, entry.path) == (model_tag(store.bucket, "bicleaner-en-es", 7), f"{store.bucket}/models/bicleaner-en-es/v7")
    got = DataRegistry(str(tmp_path / "registry"), store.settings, config.release.dvc_remote, store.bucket).get(
        entry.path, entry.tag, tmp_path / "got"
    )
    assert tree_hashes(got) == tree_hashes(model)


def test_training_a_domain_classifier_records_it_with_its_s3_version(store: ObjectStore, tmp_path: Path) -> None:
    from bitextflow.classify.data import read_labelled
    from bitextflow.classify.model import load_model
    from bitextflow.classify.offline import offline_set
    from bitextflow.stages.train_domain import train_domain, with_training

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        registry_settings(store, tmp_path / "registry")
    )
    config = with_training(config, kind="svm", max_per_class=100)
    trained = train_domain(config, store, out_dir=tmp_path / "svm", sentences=read_labelled(offline_set("en")), zero_shot=[])
    version = int(trained.uri.rstrip("/").rsplit("/v", 1)[1])
    tag = model_tag(store.bucket, "domain-en-es", version)
    path = f"{store.bucket}/models/domain-en-es/v{version}"
    assert trained.summary()["dvc_get"] == f"dvc get {tmp_path / 'registry'} {path} --rev {tag}"

    got = DataRegistry(str(tmp_path / "registry"), store.settings, config.release.dvc_remote, store.bucket).get(
        path, tag, tmp_path / "got"
    )
    classifier, metadata = load_model(got, "en-es")
    assert metadata["kind"] == "svm" and classifier.predict_proba(["Install the package with apt-get."]).shape == (1, 4)


def test_no_registry_recording_when_the_pair_turns_it_off(store: ObjectStore, tmp_path: Path) -> None:
    from bitextflow.classify.data import read_labelled
    from bitextflow.classify.offline import offline_set
    from bitextflow.stages.train_domain import train_domain, with_training

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {**registry_settings(store, tmp_path / "registry"), "release.record_in_registry": False}
    )
    trained = train_domain(
        with_training(config, kind="svm", max_per_class=100), store, out_dir=tmp_path / "svm",
        sentences=read_labelled(offline_set("en")), zero_shot=[],
    )  # fmt: skip
    assert trained.uri and trained.summary()["dvc_get"] is None and not (tmp_path / "registry").exists()


def test_record_command_records_the_built_model_or_names_what_is_missing(s3_env, tmp_path: Path, monkeypatch, capsys) -> None:
    from bitextflow import cli
    from bitextflow.score import bicleaner

    monkeypatch.setenv("BITEXTFLOW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BITEXTFLOW_REGISTRY", str(tmp_path / "registry"))
    record = ["models", "record-bicleaner", "--pair", "en-es"]
    assert cli.main(record) == 2
    assert "bicleaner-ai model missing" in capsys.readouterr().err

    model = model_folder(bicleaner.default_model_dir("en-es"), bicleaner.MODEL_VERSION)
    (model / "vocab" / "spm.model").write_bytes(b"sentencepiece")
    settings = "{model_file: model.h5, spm_file: vocab/spm.model, vocab_file: vocab/spm.vocab}"
    metadata = f"source_lang: en\ntarget_lang: es\nclassifier_type: dec_attention\nclassifier_settings: {settings}\n"
    (model / "metadata.yaml").write_text(metadata, encoding="utf-8")
    assert cli.main(record) == 0
    tag = model_tag("bitextflow", "bicleaner-en-es", bicleaner.MODEL_VERSION)
    assert (
        f"en-es: recorded; fetch with `dvc get {tmp_path / 'registry'} bitextflow/models/bicleaner-en-es/v"
        in capsys.readouterr().out
    )
    assert DataRegistry(
        str(tmp_path / "registry"), ObjectStore.from_env("bitextflow").settings, "s3://bitextflow/dvc", "bitextflow"
    ).tags() == [tag]


def test_a_downloaded_bicleaner_model_is_not_recorded_as_one_of_ours(store: ObjectStore, tmp_path: Path) -> None:
    from bitextflow.catalog.models import publish_bicleaner_model, record_bicleaner_model

    downloaded = tmp_path / "bicleaner-ai-lite-en-es"
    downloaded.mkdir()
    (downloaded / "metadata.yaml").write_text("classifier_type: dec_attention\n", encoding="utf-8")
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        registry_settings(store, tmp_path / "registry")
    )
    with pytest.raises(StageError, match="is a downloaded bicleaner-ai model"):
        record_bicleaner_model(config, store.settings, downloaded)
    assert publish_bicleaner_model(store, "en-es", downloaded) is None
