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

from bitextflow.catalog.releases import MANIFEST_NAME, ReleaseInfo, list_releases, publish_release, release_prefix
from bitextflow.config import load_pair_config
from bitextflow.counts import StageCounts
from bitextflow.errors import GateFailed, StageError, StorageError
from bitextflow.release.build import MonolingualCorpus, ReleaseExtras, build_release
from bitextflow.release.datasheet import read_licence
from bitextflow.release.formats import validate_tmx
from bitextflow.release.report import crawl_profile
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow_local.services.seaweed import SeaweedServer
from tests.support import ROOT

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


def extras(df: pd.DataFrame) -> ReleaseExtras:
    """What a pipeline run adds to the pairs: document pairs (one never yielding a pair), sentences, a crawl log."""
    documents = df[["url_a", "url_b"]].drop_duplicates()
    document_pairs = pd.DataFrame(
        {
            "doc_id_a": [f"a{i}" for i in range(len(documents) + 1)],
            "doc_id_b": [f"b{i}" for i in range(len(documents) + 1)],
            "url_a": [*documents.url_a, "https://gov.example/en/empty"],
            "url_b": [*documents.url_b, "https://gov.example/es/empty"],
            "method": "url",
            "score": 1.0,
            "partition": 3,
        }
    )
    sentences = pd.DataFrame(
        {
            "doc_id": ["d1", "d1", "d1", "d2", "d2"],
            "url": "u",
            "language": ["en", "en", "en", "es", "de"],
            "paragraph_index": [0, 0, 1, 0, 0],
            "paragraph_type": "text",
            "sentence_index": [0, 1, 0, 0, 0],
            "text": ["Install the package.", "install the package!", "A second\nline.", "Instale el paquete.", "Ein Satz."],
            "duplicate": False,
        }
    )
    crawl_log = [
        {"url": url, "outcome": "fetched", "time": float(i), "detected_language": url.split("/")[3]}
        for i, url in enumerate([*document_pairs.url_a, *document_pairs.url_b, "https://law.example/en/news"])
    ]
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    # in two chunks, as two site partitions come
    return ReleaseExtras(document_pairs, [sentences.iloc[:3], sentences.iloc[3:]], crawl_log, config)


def test_monolingual_corpus_keeps_each_sentence_once_and_counts_the_rest(tmp_path: Path) -> None:
    corpus = MonolingualCorpus(tmp_path, ["en", "es"])
    for chunk in extras(pairs()).sentences:
        corpus.add(chunk)
    corpus.close()
    assert (tmp_path / "mono.en.txt").read_text() == "Install the package.\nA second line.\n"
    assert (tmp_path / "mono.es.txt").read_text() == "Instale el paquete.\n"
    assert corpus.lines == {"en": 2, "es": 1}
    assert corpus.counts.to_dict() == {
        "stage": "release_monolingual",
        "in": 5,
        "kept": 3,
        "dropped": {"duplicate_sentence": 1, "other_language": 1},
    }


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


def test_crawl_efficiency_counts_paired_pages_in_download_order() -> None:
    log = [
        {"url": "http://b/", "outcome": "fetched", "time": 2.0, "detected_language": "es"},
        {"url": "http://a/", "outcome": "fetched", "time": 1.0},
        {"url": "http://c/", "outcome": "robots_disallowed", "time": 1.5},
        {"url": "http://d/", "outcome": "fetched", "time": 3.0, "detected_language": "es"},
    ]
    crawl = crawl_profile(log, {"http://a/", "http://d/"})
    assert crawl.curve().tolist() == [1, 1, 2]
    assert crawl.languages == {"es": 2, "(unknown)": 1} and crawl.fetched_per_host == {"a": 1, "b": 1, "d": 1}


def test_tmx_is_checked_against_the_tmx_1_4_dtd(tmp_path: Path) -> None:
    good = build_release(tmp_path / "good", PAIR, 1, pairs(), [], "r", None)
    assert validate_tmx(next(p for p in good if p.suffix == ".tmx")) == 25
    missing_lang = tmp_path / "bad.tmx"
    text = (tmp_path / "good" / f"{PAIR}.tmx").read_text()
    missing_lang.write_text(text.replace(' xml:lang="es"', "", 1))
    with pytest.raises(StageError, match=r"bad.tmx:\d+: not valid TMX 1.4 .*xml:lang"):
        validate_tmx(missing_lang)
    truncated = tmp_path / "cut.tmx"
    truncated.write_text(text[: len(text) // 2])
    with pytest.raises(StageError, match="cut.tmx: not well-formed XML"):
        validate_tmx(truncated)


def test_licences_are_read_from_debian_copyright_files(tmp_path: Path) -> None:
    dep5 = tmp_path / "dep5"
    dep5.write_text("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
                    "Files: *\nCopyright: 2007 Osamu Aoki\nLicense: GPL-2+\n")  # fmt: skip
    free = tmp_path / "free"
    free.write_text("The Guide is copyright 1996 Bruce Perens. It is\nlicensed under the terms of the GNU GPL, version 2.\n")
    assert read_licence(dep5) == ("GPL-2+", "2007 Osamu Aoki")
    assert read_licence(free) == (
        "It is licensed under the terms of the GNU GPL, version 2.",
        "The Guide is copyright 1996 Bruce Perens",
    )


def test_host_names_that_read_as_formulas_do_not_fail_the_report(tmp_path: Path) -> None:
    """A ``$`` starts mathtext in a matplotlib label: a host such as ``a$^{$.example`` failed the release."""
    df = pairs(12)
    df["url_a"] = [url.replace("https://law.example", "https://a$^{$.example") for url in df["url_a"]]
    paths = build_release(
        tmp_path,
        PAIR,
        1,
        df,
        counts(),
        "run-dollar",
        GATE_REPORT,
        ReleaseExtras(crawl_log=[{"url": df["url_a"][0], "outcome": "fetched"}]),
    )
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert tmp_path / "report.html" in paths and "a$^{$.example" in report


def test_the_ilsp_fc_export_carries_control_characters_from_the_web_as_replacements() -> None:
    from bitextflow.extract.export import document_xml

    row = {
        "title": "Install\x0b", "encoding": "utf-8", "date": "", "url": "http://s/a\x01.html", "language": "en",
        "language_set": [], "keywords": "apt\x02", "relevance": 0.0, "relevance_terms": 0, "description": "",
        "warc_key": "crawl/crawl-00000.warc.gz", "warc_offset": 0, "warc_record_id": "<urn:uuid:1\x1f>", "paragraphs": [],
    }  # fmt: skip
    root = etree.fromstring(document_xml(row))
    ns = {"c": "http://www.xces.org/schema/2003"}
    assert root.findtext(".//c:imprint/c:eAddress", namespaces=ns) == "http://s/a\ufffd.html"
    assert root.find(".//c:annotation[@type='warc']", ns).get("record") == "<urn:uuid:1\ufffd>"


def test_the_report_shows_pairs_per_score_band_and_says_when_a_score_was_not_computed(tmp_path: Path) -> None:
    """An empty bicleaner_score histogram was drawn when nothing was scored, and no pair was ever shown."""
    df = pairs(12).assign(bicleaner_score=None)
    df["alignment_score"] = [i / 12 for i in range(12)]
    extras = ReleaseExtras(crawl_log=[{"url": df["url_a"][0], "outcome": "fetched"}])
    build_release(tmp_path, PAIR, 1, df, counts(), "run-bands", GATE_REPORT, extras)
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    tree = etree.fromstring(report.encode(), etree.HTMLParser())
    assert "Score: bicleaner_score" not in {img.get("alt") for img in tree.iter("img")}
    assert "Not computed for this release: no pair has a bicleaner_score" in report
    (table,) = [t for t in tree.iter("table") if t.findtext("tr/th[2]") == "alignment_score"]
    rows = [[cell.text for cell in row.findall("td")] for row in table.findall("tr")[1:]]
    assert [row[0] for row in rows] == ["lowest"] * 3 + ["median"] * 3 + ["highest"] * 3
    assert rows[0][1:] == ["0.000", df.text_a[0], df.text_b[0]] and rows[-3][1:] == ["0.917", df.text_a[11], df.text_b[11]]


def test_seen_hashes_say_which_are_new_in_order_across_chunks_and_at_the_ends_of_the_range() -> None:
    import random

    from bitextflow.hashing import SeenHashes

    rng = random.Random(3)
    seen, reference = SeenHashes(), set()
    for _ in range(300):  # enough chunks for the runs to merge several times
        chunk = [
            rng.getrandbits(64) if rng.random() < 0.7 else rng.choice([0, 1, 2**63, 2**64 - 1]) for _ in range(rng.randint(0, 50))
        ]
        expected = []
        for value in chunk:
            expected.append(value not in reference)
            reference.add(value)
        assert seen.add(chunk).tolist() == expected
    assert len(seen) == len(reference)
