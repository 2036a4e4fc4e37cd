"""The DVC registry as an attacker and a second deployment would meet it, for real (git and DVC subprocesses, the
SeaweedFS server): a release manifest cannot write outside its folder, two buckets share one registry with a DVC
remote each (push included), and a failure says DVC's error and what became of the release."""

from __future__ import annotations

import configparser
import hashlib
import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

from bitextflow.catalog.registry import registry_for
from bitextflow.catalog.releases import MANIFEST_NAME, list_releases, publish_release, release_prefix
from bitextflow.config import PairConfig
from bitextflow.errors import StageError, StorageError
from bitextflow.storage import ObjectStore

PAIR = "en-es"


def sentence_pairs(n: int, tag: str) -> pd.DataFrame:
    return pd.DataFrame(
        {"url_a": [f"http://s.example/en/{i}" for i in range(n)], "url_b": [f"http://s.example/es/{i}" for i in range(n)],
         "lang_a": "en", "lang_b": "es", "text_a": [f"Install package {i} {tag}." for i in range(n)],
         "text_b": [f"Instale el paquete {i} {tag}." for i in range(n)], "alignment_score": 0.8, "rule_tags": "",
         "domain_relevance": 0.4, "domain_terms": "", "pair_hash": [hashlib.sha1(f"{i}{tag}".encode()).hexdigest() for i in range(n)]}
    )  # fmt: skip


def fresh_bucket(store: ObjectStore, name: str) -> ObjectStore:
    bucket = ObjectStore(store.settings, f"{name}-{uuid.uuid4().hex[:8]}")
    bucket.ensure_bucket()
    return bucket


def deployment(config: PairConfig, bucket: str, registry: Path, **release: str) -> PairConfig:
    """The pair config as an operator runs it with `--set storage.bucket=<bucket>` (and release options)."""
    return config.with_overrides(
        {"storage.bucket": bucket, "release.registry": str(registry), **{f"release.{k}": v for k, v in release.items()}}
    )


def test_a_release_manifest_cannot_write_outside_the_release_folder(store, pair_config, tmp_path) -> None:
    bucket = fresh_bucket(store, "escape")
    info = publish_release(bucket, PAIR, sentence_pairs(3, "x"), [], "run-escape", None)
    prefix = release_prefix(PAIR, info.version)
    manifest = bucket.get_json(prefix + MANIFEST_NAME)
    hook = b"#!/bin/sh\ntouch /tmp/owned\n"
    # SeaweedFS refuses such a key, AWS S3 takes it: the name in the manifest is what the registry must refuse
    name = "../../../../.git/hooks/post-commit"
    manifest["files"][name] = {"size": len(hook), "sha256": hashlib.sha256(hook).hexdigest()}
    bucket.put_bytes(prefix + MANIFEST_NAME, json.dumps(manifest).encode())
    registry_dir = tmp_path / "registry"
    registry = registry_for(deployment(pair_config, bucket.bucket, registry_dir), bucket.settings)

    with pytest.raises(StorageError, match=r"would be written outside .*refusing to download it"):
        registry.record(bucket, list_releases(bucket, PAIR)[0])
    assert not (registry_dir / ".git" / "hooks" / "post-commit").exists()
    assert not list((registry_dir / bucket.bucket).rglob("*.tsv")), "refused before anything was written"


def test_two_buckets_share_a_registry_each_with_its_own_dvc_remote(store, pair_config, tmp_path) -> None:
    """The second bucket's remote replaces the first's in the registry's DVC config and keeps the S3 endpoint, so its
    push reaches SeaweedFS (it went to AWS: "Unable to locate credentials"); each tag gets its bucket's release back."""
    registry_dir = tmp_path / "registry"
    recorded = []
    for name in ("docs", "handbook"):
        bucket = fresh_bucket(store, name)
        info = publish_release(bucket, PAIR, sentence_pairs(4, name), [], f"run-{name}", None)
        registry = registry_for(deployment(pair_config, bucket.bucket, registry_dir), bucket.settings)
        entry = registry.record(bucket, info)
        dvc = configparser.ConfigParser()
        dvc.read(registry_dir / ".dvc" / "config")
        assert dvc["'remote \"storage\"'"]["url"] == f"s3://{bucket.bucket}/dvc"
        assert dvc["'remote \"storage\"'"]["endpointurl"] == bucket.settings.endpoint_url
        recorded.append((bucket, info, registry, entry))
    for bucket, info, registry, entry in recorded:
        got = registry.get(entry.path, entry.tag, tmp_path / f"got-{bucket.bucket}")
        manifest = bucket.get_json(release_prefix(PAIR, info.version) + MANIFEST_NAME)
        assert {n: hashlib.sha256((got / n).read_bytes()).hexdigest() for n in manifest["files"]} == {
            n: e["sha256"] for n, e in manifest["files"].items()
        }


def test_a_release_that_cannot_be_recorded_says_it_is_published_and_how_to_record_it(store, pair_config, tmp_path) -> None:
    """The outcome names DVC's error line (not its support footer), that the release is published, and the command."""
    from bitextflow import records
    from bitextflow.stages.registry import REGISTRY, run_context
    from bitextflow.storage.tables import write_table

    bucket = fresh_bucket(store, "handbook")
    config = deployment(pair_config, bucket.bucket, tmp_path / "registry", dvc_remote="s3://no-such-bucket-anywhere/dvc")
    ctx = run_context(config, bucket, "manual__unrecorded")
    frame = sentence_pairs(120, "r").assign(
        url_a="http://s.example/en/", url_b="http://s.example/es/", domain_probs_a="", domain_probs_b=""
    )
    gated = write_table(bucket, ctx.key("gate", "part-00000.sentence_pairs.parquet"), frame, records.CLASSIFIED_SENTENCE_PAIRS)
    bucket.put_json(ctx.key("gate", "sentence_pairs.report.json"), {"suite": "sentence_pairs", "success": True})
    document_pair = records.DocumentPair("a", "b", "http://s.example/en/", "http://s.example/es/", "url", 1.0)
    write_table(
        bucket,
        ctx.key("align_documents", "docpairs-part-00000-00000.parquet"),
        records.frame_of([document_pair], records.DOCUMENT_PAIRS),
        records.DOCUMENT_PAIRS,
    )

    with pytest.raises(StageError) as failure:
        REGISTRY.run(ctx, "release", [gated])
    message = str(failure.value)
    (info,) = list_releases(bucket, PAIR)
    assert message.startswith(f"release v1 of en-es is published at {info.uri} but not recorded in the DVC registry: ")
    assert "dvc push failed (ERROR:" in message and "Having any troubles" not in message and "\n" not in message
    assert message.endswith(
        "record it with `bitextflow releases record --pair en-es --version 1 "
        f"--set storage.bucket={bucket.bucket} --set release.dvc_remote=s3://no-such-bucket-anywhere/dvc`"
    )
