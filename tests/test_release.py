"""Releases against a real S3 server (SeaweedFS): numbering, idempotent retries, crash safety, file contents."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import socket
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from lxml import etree

from bitextflow.counts import StageCounts
from bitextflow.errors import StorageError
from bitextflow.release import MANIFEST_NAME, ReleaseInfo, list_releases, publish_release, release_prefix
from bitextflow.services.seaweed import SeaweedServer
from bitextflow.storage import ObjectStore, StorageSettings

pytestmark = pytest.mark.integration

PAIR = "en-es"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
GATE_REPORT = {"success": True, "failures": [], "evaluated": 17, "statistics": {"success_percent": 100.0}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedServer]:
    with SeaweedServer(tmp_path_factory.mktemp("seaweed")) as running:
        yield running


@pytest.fixture
def store(server: SeaweedServer) -> ObjectStore:
    """A fresh bucket per test, so tests never see each other's releases."""
    settings = StorageSettings(server.endpoint_url, server.access_key_id, server.secret_access_key)
    bucket_store = ObjectStore(settings, f"test-{uuid.uuid4().hex[:12]}")
    bucket_store.ensure_bucket()
    return bucket_store


def pairs(n: int = 25, tag: str = "") -> pd.DataFrame:
    """Sentence pairs, some with the characters that break naive writers (tabs, newlines, controls, markup)."""
    text_a = [f"Article {i}{tag}: the parties agree & sign <here>." for i in range(n)]
    text_b = [f"Artículo {i}{tag}: las partes acuerdan y firman «aquí»." for i in range(n)]
    text_a[0] = "A tab\there and a newline\nthere."
    text_b[1] = "Control \x01\x07 characters\r\nand a line separator\u2028too."
    return pd.DataFrame(
        {
            "url_a": [f"https://{'law' if i % 3 else 'gov'}.example/en/doc{i // 4}" for i in range(n)],
            "url_b": [f"https://{'law' if i % 3 else 'gov'}.example/es/doc{i // 4}" for i in range(n)],
            "lang_a": "en",
            "lang_b": "es",
            "text_a": text_a,
            "text_b": text_b,
            "alignment_score": [round(0.4 + 0.02 * i, 3) for i in range(n)],
            "rule_tags": "",
            "domain_relevance": [round((i % 7) / 7, 3) for i in range(n)],
            "domain_terms": "contract;contrato",
            "pair_hash": [f"{i % (n - 2):08x}" for i in range(n)],  # two repeated pairs
        }
    )


def counts() -> list[StageCounts]:
    align = StageCounts("align", items_in=40, kept=25)
    align.drop("low_alignment_score", 15)
    return [StageCounts("crawl", items_in=12, kept=12), align]


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
    names = {f"{PAIR}.tsv", f"{PAIR}.tmx", "stats.json", "gate.json"}
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
    assert len(recording.written) == 5
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


def test_publish_without_gate_report_records_it(store: ObjectStore) -> None:
    info = publish_release(store, PAIR, pairs(3), [], "manual__nogate", None)
    prefix = release_prefix(PAIR, info.version)
    assert store.get_json(prefix + "gate.json")["success"] is None
    assert store.get_json(prefix + MANIFEST_NAME)["gate_success"] is None


def test_seaweed_server_stops_its_process_group(tmp_path: Path) -> None:
    server = SeaweedServer(tmp_path / "seaweed", buckets=["probe-bucket"])
    client = server.client()
    client.put_object(Bucket="probe-bucket", Key="k", Body=b"v")
    assert client.get_object(Bucket="probe-bucket", Key="k")["Body"].read() == b"v"
    server.stop()
    assert not server.running
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.ports["s3"]), timeout=1):
        pass
    server.stop()  # a second stop is harmless
