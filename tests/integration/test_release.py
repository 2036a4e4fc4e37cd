"""Releases against a real S3 server (SeaweedFS): numbering, idempotent retries, crash safety, file contents.

The tests of this module against real services; those that need none are tests/unit/test_release.py's.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import uuid
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from lxml import etree

from bitextflow.catalog.releases import MANIFEST_NAME, ReleaseInfo, list_releases, publish_release, release_prefix
from bitextflow.errors import GateFailed, StorageError
from bitextflow.release.build import build_release
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow_local.services.seaweed import SeaweedServer
from tests.unit.test_release import GATE_REPORT, PAIR, counts, extras, pairs

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


@pytest.fixture
def store(s3_server: SeaweedServer) -> ObjectStore:
    """A fresh bucket of the session's S3 server per test, so tests never see each other's releases."""
    settings = StorageSettings(s3_server.endpoint_url, s3_server.access_key_id, s3_server.secret_access_key)
    bucket_store = ObjectStore(settings, f"test-{uuid.uuid4().hex[:12]}")
    bucket_store.ensure_bucket()
    return bucket_store


def publish(store: ObjectStore, df: pd.DataFrame, run_id: str) -> ReleaseInfo:
    return publish_release(store, PAIR, df, counts(), run_id, GATE_REPORT)


def test_versions_increase_and_retries_return_the_same_release(store: ObjectStore) -> None:
    first = publish(store, pairs(), "scheduled__2026-11-20")
    second = publish(store, pairs(30, tag="b"), "scheduled__2026-11-21")
    retried = publish(store, pairs(99), "scheduled__2026-11-20")

    assert (first.version, second.version) == (1, 2)
    assert retried == first
    assert first.uri == f"s3://{store.bucket}/releases/{PAIR}/v1/"
    assert (first.sentence_pairs, second.sentence_pairs) == (25, 30)
    assert first.created.endswith("Z") and "T" in first.created
    assert not store.list_keys(release_prefix(PAIR, 3))
    assert [r.to_dict() for r in list_releases(store, PAIR)] == [first.to_dict(), second.to_dict()]
    assert list_releases(store, "en-fr") == []


def test_release_files_are_complete_and_match_the_manifest(store: ObjectStore) -> None:
    df = pairs()
    info = publish(store, df, "manual__1")
    prefix = release_prefix(PAIR, info.version)
    manifest = store.get_json(prefix + MANIFEST_NAME)
    names = {f"{PAIR}.tsv", f"{PAIR}.tmx", f"{PAIR}.jsonl", "stats.json", "gate.json"}
    assert set(manifest["files"]) == names
    assert set(store.list_keys(prefix)) == {prefix + n for n in names | {MANIFEST_NAME}}
    blobs = {name: store.get_bytes(prefix + name) for name in names}
    for name, entry in manifest["files"].items():
        assert entry == {"size": len(blobs[name]), "sha256": hashlib.sha256(blobs[name]).hexdigest()}
    assert manifest | {"files": None} == {
        "version": 1, "pair": PAIR, "run_id": "manual__1", "created": info.created,
        "sentence_pairs": 25, "gate_success": True, "files": None,
    }  # fmt: skip

    tsv = blobs[f"{PAIR}.tsv"].decode("utf-8")
    lines = tsv.split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(df)
    rows = list(csv.reader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE))
    assert {len(row) for row in rows} == {6}
    assert rows[0][:3] == [df.url_a[0], df.url_b[0], "A tab here and a newline there."]
    assert rows[1][3] == "Control \x01\x07 characters  and a line separator too."
    assert rows[2][4:] == ["0.4400", f"{df.domain_relevance[2]:.4f}"]

    tmx = etree.fromstring(blobs[f"{PAIR}.tmx"])
    assert tmx.get("version") == "1.4"
    header = tmx.find("header")
    assert {k: header.get(k) for k in ("srclang", "adminlang", "segtype", "creationtool")} == {
        "srclang": "en", "adminlang": "en", "segtype": "sentence", "creationtool": "bitextflow",
    }  # fmt: skip
    units = tmx.findall("body/tu")
    assert len(units) == len(df)
    tuvs = units[1].findall("tuv")
    assert [t.get(XML_LANG) for t in tuvs] == ["en", "es"]
    assert [t.findtext("prop[@type='source-document']") for t in tuvs] == [df.url_a[1], df.url_b[1]]
    assert tuvs[1].findtext("seg") == "Control \ufffd\ufffd characters\r\nand a line separator\u2028too."
    assert units[0].findtext("tuv/seg") == df.text_a[0]
    assert units[2].findtext("prop[@type='score-aligner']") == "0.4400"

    stats = json.loads(blobs["stats.json"])
    assert (stats["sentence_pairs"], stats["unique_pairs"]) == (25, 23)
    assert stats["document_pairs"] == len(set(zip(df.url_a, df.url_b, strict=True)))
    assert stats["side_a"]["characters"] == int(df.text_a.str.len().sum())
    assert stats["side_a"]["tokens"] == sum(len(t.split()) for t in df.text_a)
    assert sum(stats["side_b"]["token_length_histogram"]["counts"]) == 25
    hosts = Counter("gov" if i % 3 == 0 else "law" for i in range(25))
    assert stats["side_a"]["top_hosts"] == [
        {"host": "law.example", "sentence_pairs": hosts["law"]},
        {"host": "gov.example", "sentence_pairs": hosts["gov"]},
    ]
    assert stats["alignment_score"]["min"] == 0.4 and stats["alignment_score"]["max"] == 0.88
    assert [c["stage"] for c in stats["stage_counts"]] == ["crawl", "align"]
    assert stats["stage_counts"][1]["dropped"] == {"low_alignment_score": 15}
    assert json.loads(blobs["gate.json"]) == GATE_REPORT


class RecordingStore(ObjectStore):
    """An ObjectStore that records the order of writes and can fail on a chosen key, like a crash."""

    def __init__(self, base: ObjectStore, crash_on: str | None = None) -> None:
        super().__init__(base.settings, base.bucket)
        self.written: list[str] = []
        self.crash_on = crash_on

    def _record(self, key: str) -> None:
        if self.crash_on and key.endswith(self.crash_on):
            raise StorageError(f"simulated crash before writing {key}")
        self.written.append(key)

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        self._record(key)
        return super().put_bytes(key, data, content_type)

    def put_file(self, key: str, path: str | Path, content_type: str = "application/octet-stream") -> str:
        self._record(key)
        return super().put_file(key, path, content_type)


def test_manifest_is_written_last(store: ObjectStore) -> None:
    recording = RecordingStore(store)
    publish(recording, pairs(), "manual__order")
    assert len(recording.written) == 6
    assert recording.written[-1] == release_prefix(PAIR, 1) + MANIFEST_NAME


def test_a_crashed_publish_leaves_no_release_and_the_retry_takes_its_place(store: ObjectStore) -> None:
    with pytest.raises(StorageError, match="simulated crash"):
        publish(RecordingStore(store, crash_on="gate.json"), pairs(), "manual__crash")
    leftovers = store.list_keys(release_prefix(PAIR, 1))
    assert leftovers and not any(k.endswith(MANIFEST_NAME) for k in leftovers)
    store.put_bytes(release_prefix(PAIR, 1) + "stray.bin", b"from an older attempt")
    assert list_releases(store, PAIR) == []

    info = publish(store, pairs(), "manual__crash")
    assert info.version == 1
    assert [r.version for r in list_releases(store, PAIR)] == [1]
    assert release_prefix(PAIR, 1) + "stray.bin" not in store.list_keys(release_prefix(PAIR, 1))


def test_a_release_its_verifier_rejects_uploads_nothing(store: ObjectStore) -> None:
    seen: list[tuple[list[str], int]] = []

    def reject(directory: Path, version: int) -> None:
        seen.append((sorted(p.name for p in directory.iterdir()), version))
        raise GateFailed("release-files quality gate failed 1 of 2 expectations")

    with pytest.raises(GateFailed):
        publish_release(store, PAIR, pairs(), counts(), "manual__rejected", GATE_REPORT, verify=reject)
    assert seen == [([f"{PAIR}.jsonl", f"{PAIR}.tmx", f"{PAIR}.tsv", "gate.json", "stats.json"], 1)]
    assert store.list_keys(release_prefix(PAIR, 1)) == [] and list_releases(store, PAIR) == []


def test_publish_without_gate_report_records_it(store: ObjectStore) -> None:
    info = publish_release(store, PAIR, pairs(3), [], "manual__nogate", None)
    prefix = release_prefix(PAIR, info.version)
    assert store.get_json(prefix + "gate.json")["success"] is None
    assert store.get_json(prefix + MANIFEST_NAME)["gate_success"] is None


def test_full_release_has_every_file_and_rebuilds_byte_for_byte(store: ObjectStore, tmp_path: Path) -> None:
    df = pairs().assign(bicleaner_score=[i / 25 for i in range(25)], domain_label="legal")
    df["domain_distribution"] = [{"legal": 0.9, "other": 0.1}] * 25
    df["domain_probs_a"] = '{"legal": 0.8, "other": 0.2}'  # classify stores each side's distribution as JSON text
    info = publish_release(store, PAIR, df, counts(), "manual__full", GATE_REPORT, extras(df))
    prefix = release_prefix(PAIR, info.version)
    manifest = store.get_json(prefix + MANIFEST_NAME)
    assert set(manifest["files"]) == {
        f"{PAIR}.tsv", f"{PAIR}.tmx", f"{PAIR}.jsonl", "document_pairs.jsonl", "mono.en.txt", "mono.es.txt",
        "stats.json", "gate.json", "report.html", "datasheet.md",
    }  # fmt: skip

    records = [json.loads(line) for line in store.get_bytes(prefix + f"{PAIR}.jsonl").splitlines()]
    assert len(records) == 25 and list(records[3]) == list(df.columns)
    assert records[1]["text_b"] == df.text_b[1] and records[5]["bicleaner_score"] == 0.2
    assert records[0]["domain_distribution"] == {"legal": 0.9, "other": 0.1}
    document_pairs = [json.loads(line) for line in store.get_bytes(prefix + "document_pairs.jsonl").splitlines()]
    assert (
        sum(d["sentence_pairs"] for d in document_pairs) == 25
        and {d["url_a"]: d["sentence_pairs"] for d in document_pairs}["https://gov.example/en/empty"] == 0
    )
    assert "partition" not in document_pairs[0], "where the run stored a pair is not part of it"
    assert store.get_bytes(prefix + "mono.en.txt").decode() == "Install the package.\nA second line.\n"
    stats = store.get_json(prefix + "stats.json")
    assert stats["monolingual_sentences"] == {"en": 2, "es": 1} and stats["aligned_document_pairs"] == len(document_pairs)
    assert stats["stage_counts"][-1]["stage"] == "release_monolingual"

    report = store.get_bytes(prefix + "report.html").decode()
    tree = etree.fromstring(report.encode(), etree.HTMLParser())
    titles = [img.get("alt") for img in tree.iter("img")]
    assert all(img.get("src").startswith("data:image/png;base64,iVBOR") for img in tree.iter("img"))
    assert {"Sentence length", "Score: alignment_score", "Score: bicleaner_score", "Yield per site", "Languages of fetched pages",
            "Domain terms", "Distribution: domain_label", "Distribution: domain_distribution", "Distribution: domain_probs_a", "Counts per stage",
            "Crawl efficiency"} <= set(titles)  # fmt: skip
    datasheet = store.get_bytes(prefix + "datasheet.md").decode()
    assert "# Datasheet: en-es parallel corpus, v1" in datasheet and "`max_duplicate_share` | `0.0`" in datasheet
    assert "http://127.0.0.1:8765/" in datasheet and "25 sentence pairs (23 unique)" in datasheet

    rebuilt = build_release(tmp_path, PAIR, info.version, df, counts(), "manual__full", GATE_REPORT, extras(df))
    for path in rebuilt:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == manifest["files"][path.name]["sha256"], path.name
