"""The DVC data registry and `dvc repro`, for real: git + DVC subprocesses, a DVC remote on SeaweedFS.

`dvc get` runs after the registry's DVC cache is deleted, so the files it returns come from S3.


The tests of this module against real services; those that need none are tests/unit/test_registry.py's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest
import yaml

from bitextflow import records
from bitextflow.catalog.registry import DataRegistry, registry_for, release_path, release_tag
from bitextflow.catalog.releases import MANIFEST_NAME, list_releases, publish_release, release_prefix
from bitextflow.catalog.status import format_status, pair_status
from bitextflow.config import load_pair_config
from bitextflow.counts import StageCounts
from bitextflow.stages.registry import REGISTRY
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import stage_key
from bitextflow.storage.tables import write_table
from tests.support import ROOT

PAIR = "en-es"


def sentence_pairs(n: int, tag: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "url_a": [f"http://site.example/en/p{i // 3}.html" for i in range(n)],
            "url_b": [f"http://site.example/es/p{i // 3}.html" for i in range(n)],
            "lang_a": "en",
            "lang_b": "es",
            "text_a": [f"Install package number {i} {tag} with apt." for i in range(n)],
            "text_b": [f"Instale el paquete número {i} {tag} con apt." for i in range(n)],
            "alignment_score": [0.5 + i / (4 * n) for i in range(n)],
            "rule_tags": "",
            "domain_relevance": 0.4,
            "domain_terms": "package;paquete",
            "pair_hash": [hashlib.sha1(f"{i}{tag}".encode()).hexdigest() for i in range(n)],
            "domain_probs_a": "",
            "domain_probs_b": "",
        }
    )


@pytest.fixture
def bucket_store(store: ObjectStore) -> ObjectStore:
    """A fresh bucket on the session's SeaweedFS, so releases of other tests are not in the way."""
    fresh = ObjectStore(store.settings, f"reg-{uuid.uuid4().hex[:10]}")
    fresh.ensure_bucket()
    return fresh


def manifest_hashes(store: ObjectStore, version: int) -> dict[str, str]:
    manifest = store.get_json(release_prefix(PAIR, version) + MANIFEST_NAME)
    return {name: entry["sha256"] for name, entry in manifest["files"].items()}


def file_hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.name != MANIFEST_NAME}


def test_each_release_is_tagged_and_dvc_get_returns_exactly_it(bucket_store: ObjectStore, tmp_path: Path) -> None:
    first = publish_release(bucket_store, PAIR, sentence_pairs(12, "a"), [], "run-1", None)
    second = publish_release(bucket_store, PAIR, sentence_pairs(20, "b"), [], "run-2", None)
    registry = DataRegistry(str(tmp_path / "registry"), bucket_store.settings, f"s3://{bucket_store.bucket}/dvc", "ns")

    entries = [registry.record(bucket_store, info) for info in (first, second)]
    assert [e.tag for e in entries] == ["ns/en-es-v1", "ns/en-es-v2"] and all(e.recorded for e in entries)
    assert entries[0].get_command == f"dvc get {tmp_path / 'registry'} ns/releases/en-es/v1 --rev ns/en-es-v1"
    retried = registry.record(bucket_store, first)
    assert not retried.recorded and retried.commit == entries[0].commit
    assert registry.tags() == ["ns/en-es-v1", "ns/en-es-v2"]
    config_text = (tmp_path / "registry" / ".dvc" / "config").read_text()
    assert bucket_store.settings.secret_access_key not in config_text and "endpointurl" in config_text
    assert bucket_store.list_keys("dvc/"), "dvc push stored nothing on the S3 remote"

    shutil.rmtree(tmp_path / "registry" / ".dvc" / "cache")  # what dvc get returns must come from S3
    for info in (first, second):
        got = registry.get(
            release_path("ns", PAIR, info.version), release_tag("ns", PAIR, info.version), tmp_path / f"got-v{info.version}"
        )
        assert file_hashes(got) == manifest_hashes(bucket_store, info.version)
        assert json.loads((got / MANIFEST_NAME).read_text())["run_id"] == info.run_id


def test_a_git_url_registry_is_cloned_updated_and_pushed(bucket_store: ObjectStore, tmp_path: Path) -> None:
    bare = tmp_path / "registry.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    info = publish_release(bucket_store, PAIR, sentence_pairs(5, "c"), [], "run-url", None)
    registry = DataRegistry(f"file://{bare}", bucket_store.settings, f"s3://{bucket_store.bucket}/dvc", "ns")

    entry = registry.record(bucket_store, info)
    assert registry.tags() == ["ns/en-es-v1"] and entry.registry == f"file://{bare}"
    got = registry.get("ns/releases/en-es/v1", "ns/en-es-v1", tmp_path / "got")
    assert file_hashes(got) == manifest_hashes(bucket_store, 1)


def test_registry_errors_are_one_line(bucket_store: ObjectStore, tmp_path: Path) -> None:
    from bitextflow.errors import StageError

    with pytest.raises(StageError, match="not an s3:// URL"):
        DataRegistry(str(tmp_path / "r"), bucket_store.settings, "gs://elsewhere", "ns")
    info = publish_release(bucket_store, PAIR, sentence_pairs(3, "d"), [], "run-err", None)
    broken = DataRegistry(str(tmp_path / "r"), bucket_store.settings, "s3://no-such-bucket-here/dvc", "ns")
    with pytest.raises(StageError) as failure:
        broken.record(bucket_store, info)
    assert "dvc push failed" in str(failure.value) and "\n" not in str(failure.value)
    assert bucket_store.settings.secret_access_key not in str(failure.value)


def test_registry_follows_the_pair_config_and_environment(store: ObjectStore, tmp_path: Path, monkeypatch) -> None:
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    monkeypatch.setenv("BITEXTFLOW_REGISTRY", str(tmp_path / "from-env"))
    assert registry_for(config, store.settings).location == str(tmp_path / "from-env")
    assert registry_for(config, store.settings).remote_url == "s3://bitextflow/dvc"
    configured = config.with_overrides({"release.registry": str(tmp_path / "configured"), "release.dvc_remote": "s3://other/x"})
    assert (registry_for(configured, store.settings).location, registry_for(configured, store.settings).remote_url) == (
        str(tmp_path / "configured"),
        "s3://other/x",
    )


def write_gated_run(store: ObjectStore, run_id: str, n: int) -> None:
    """What the gate leaves in S3 for a run: the gated pairs, the gate's report and the stages' counts."""
    write_table(
        store,
        stage_key(PAIR, run_id, "gate", "part-00000.sentence_pairs.parquet"),
        sentence_pairs(n, run_id),
        records.CLASSIFIED_SENTENCE_PAIRS,
    )
    store.put_json(
        stage_key(PAIR, run_id, "gate", "sentence_pairs.report.json"),
        {"suite": "sentence_pairs", "success": True, "failures": []},
    )
    counts = StageCounts("gate", items_in=n + 2, kept=n)
    counts.drop("duplicate_pair", 2)
    store.put_json(stage_key(PAIR, run_id, "gate", "gate.counts.json"), counts.to_dict())


def test_dvc_repro_regates_and_rebuilds_the_published_release_byte_for_byte(
    bucket_store: ObjectStore, s3_env, tmp_path: Path, monkeypatch
) -> None:
    from bitextflow.stages.registry import run_context

    data = yaml.safe_load((ROOT / "include" / "pairs" / "en-es.yaml").read_text())
    data["storage"] = {"bucket": bucket_store.bucket}
    data["gate"]["min_sentence_pairs"] = 5
    data["release"] = {"record_in_registry": False}  # the DAG test covers recording from a run
    pairs_dir = tmp_path / "pairs"
    pairs_dir.mkdir()
    (pairs_dir / "en-es.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    monkeypatch.setenv("BITEXTFLOW_PAIRS_DIR", str(pairs_dir))
    run_id = "manual__repro"
    classified = sentence_pairs(15, "r")
    write_table(
        bucket_store, stage_key(PAIR, run_id, "classify", "sentpairs-part-00000-00000.parquet"),
        pd.concat([classified, classified.head(2)], ignore_index=True), records.CLASSIFIED_SENTENCE_PAIRS,
    )  # fmt: skip
    pages = classified[["url_a", "url_b"]].drop_duplicates().reset_index(drop=True)
    document_pairs = pages.assign(
        doc_id_a=[f"a{i}" for i in pages.index], doc_id_b=[f"b{i}" for i in pages.index],
        method="url", score=1.0, partition=0,
    )  # fmt: skip
    write_table(
        bucket_store, stage_key(PAIR, run_id, "align_documents", "docpairs-part-00000-00000.parquet"), document_pairs,
        records.DOCUMENT_PAIRS,
    )  # fmt: skip

    project = tmp_path / "project"
    project.mkdir()
    for name in ("include", ".venv"):
        (project / name).symlink_to(ROOT / name)
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    stages["vars"] = [{"release": {"pair": PAIR, "run_id": run_id}}]
    (project / "dvc.yaml").write_text(yaml.safe_dump(stages))
    dvc = [sys.executable, "-m", "dvc"]
    env = {**os.environ, **s3_env, "DVC_NO_ANALYTICS": "1"}
    subprocess.run([*dvc, "init", "--no-scm", "--quiet"], cwd=project, check=True, env=env)
    repro = subprocess.run([*dvc, "repro"], cwd=project, env=env, capture_output=True, text=True)
    assert repro.returncode == 0, repro.stderr[-2000:]
    assert repro.stdout.index("Running stage 'gate'") < repro.stdout.index("Running stage 'release'")
    assert json.loads((project / "build" / "gate" / "en-es.json").read_text())[0].endswith(
        "gate/part-00000.sentence_pairs.parquet"
    )

    config = load_pair_config(pairs_dir / "en-es.yaml")
    published = REGISTRY.run(
        run_context(config, bucket_store, run_id),
        "release",
        [stage_key(PAIR, run_id, "gate", "part-00000.sentence_pairs.parquet")],
    )
    assert published["sentence_pairs"] == 15 and "registry" not in published
    assert file_hashes(project / "build" / "releases" / PAIR) == manifest_hashes(bucket_store, published["version"])


def test_status_shows_last_release_registry_tag_and_failing_gate(bucket_store: ObjectStore, tmp_path: Path) -> None:
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides({"storage.bucket": bucket_store.bucket})
    assert pair_status(bucket_store, config, REGISTRY.names())["last_run"] is None
    info = publish_release(bucket_store, PAIR, sentence_pairs(8, "s"), [StageCounts("gate", 8, 8)], "run-ok", {"success": True})
    write_gated_run(bucket_store, "run-ok", 8)
    failing = {
        "suite": "sentence_pairs",
        "success": False,
        "failures": [{"expectation": "expect_column_values_to_be_in_set", "column": "lang_b"}],
    }
    time.sleep(1.1)  # S3 times objects to the second: the failing run must be the newer one
    bucket_store.put_json(stage_key(PAIR, "run-bad", "gate", "sentence_pairs.report.json"), failing)

    status = pair_status(bucket_store, config, REGISTRY.names(), registry_tags=[f"{bucket_store.bucket}/en-es-v1"])
    assert status["releases"] == 1
    assert {k: status["last_release"][k] for k in ("version", "sentence_pairs", "gate_success", "registry_tag")} == {
        "version": info.version, "sentence_pairs": 8, "gate_success": True, "registry_tag": f"{bucket_store.bucket}/en-es-v1",
    }  # fmt: skip
    run = status["last_run"]
    assert run["run_id"] == "run-bad" and run["released_as"] is None
    assert run["failed_gates"] == [
        {"report": stage_key(PAIR, "run-bad", "gate", "sentence_pairs.report.json"), "suite": "sentence_pairs",
         "failures": failing["failures"], "more_failures": 0},
    ]  # fmt: skip
    text = format_status([status])
    assert (
        "last release v1" in text
        and f"registry tag {bucket_store.bucket}/en-es-v1" in text
        and "FAILED gate sentence_pairs" in text
    )
    assert [r.version for r in list_releases(bucket_store, PAIR)] == [1]


def test_releases_record_command_records_a_release_published_without_the_registry(
    bucket_store: ObjectStore, s3_env, tmp_path: Path, monkeypatch, capsys
) -> None:
    from bitextflow import cli

    data = yaml.safe_load((ROOT / "include" / "pairs" / "en-es.yaml").read_text())
    data["storage"] = {"bucket": bucket_store.bucket}
    data["release"] = {"registry": str(tmp_path / "registry")}
    (tmp_path / "en-es.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    monkeypatch.setenv("BITEXTFLOW_PAIRS_DIR", str(tmp_path))
    assert cli.main(["releases", "record", "--pair", "en-es"]) == 2
    assert "en-es has no release yet; run its DAG" in capsys.readouterr().err

    publish_release(bucket_store, PAIR, sentence_pairs(4, "cli"), [], "run-cli", None)
    assert cli.main(["releases", "record", "--pair", "en-es", "--version", "1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ns = bucket_store.bucket  # release.namespace defaults to the storage bucket
    assert printed["tag"] == f"{ns}/en-es-v1"
    assert printed["get"] == f"dvc get {tmp_path / 'registry'} {ns}/releases/en-es/v1 --rev {ns}/en-es-v1"
    registry = DataRegistry(str(tmp_path / "registry"), bucket_store.settings, f"s3://{bucket_store.bucket}/dvc", ns)
    assert registry.tags() == [f"{ns}/en-es-v1"]


def test_two_buckets_share_a_registry_without_taking_each_others_tags(tmp_path: Path, s3_env) -> None:
    """Each bucket's en-es v1 gets its own tag and path; the same release recorded again changes nothing;
    a tag that records other content is an error naming both digests (it used to be "recorded")."""
    from bitextflow.errors import StageError

    stores = []
    for name in ("first", "second"):
        store = ObjectStore.from_env(f"test-{name}-{uuid.uuid4().hex[:8]}")
        store.ensure_bucket()
        stores.append(store)
    registry_dir = str(tmp_path / "shared-registry")
    entries = []
    for store, text in zip(stores, ("a", "b"), strict=True):
        info = publish_release(store, PAIR, sentence_pairs(4, text), [], f"run-{text}", None)
        registry = DataRegistry(registry_dir, store.settings, f"s3://{stores[0].bucket}/dvc", store.bucket)  # one DVC remote
        entries.append((store, info, registry, registry.record(store, info)))
    assert [entry.tag for *_, entry in entries] == [f"{s.bucket}/en-es-v1" for s in stores]
    for store, info, registry, entry in entries:
        got = registry.get(entry.path, entry.tag, tmp_path / f"got-{store.bucket}")
        assert file_hashes(got) == manifest_hashes(store, info.version), "each tag returns its own bucket's release"
        assert not registry.record(store, info).recorded

    first_store, _, _, _ = entries[0]
    second_store, second_info, _, _ = entries[1]
    clash = DataRegistry(registry_dir, second_store.settings, f"s3://{first_store.bucket}/dvc", first_store.bucket)
    with pytest.raises(
        StageError, match=rf"tag {first_store.bucket}/en-es-v1 already records other content \(digest \w+\), not this one"
    ):
        clash.record(second_store, second_info)
