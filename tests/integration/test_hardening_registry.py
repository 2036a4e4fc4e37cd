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
    return config.with_overrides({"storage.bucket": bucket, "release.registry": str(registry), **{f"release.{k}": v for k, v in release.items()}})


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
