"""The extract stage reading WARC files straight from S3: a bounded buffer, no local copy, provenance
kept, damaged regions skipped by seeking; and ``crawl.warc_buckets``: a public bucket on another
endpoint read with unsigned requests, as Common Crawl's is.

The "other endpoint" is a second SeaweedFS server on 127.0.0.1 whose identity config grants the
``anonymous`` identity Read and List on one bucket only (SeaweedFS's way to make a bucket public); its
own access keys are never given to the code under test, so a read that works there was unsigned.
"""

from __future__ import annotations

import base64
import io
import json
import random
from pathlib import Path

import pandas as pd
import pytest

from bitextflow.config import load_pair_config
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError, StorageError
from bitextflow.extract.warc import iter_responses
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectReader, ObjectStore
from bitextflow.storage.tables import read_table
from bitextflow_local.services.seaweed import SeaweedServer
from tests.support import ROOT
from tests.unit.test_extract import EN, ES, html_page, make_warc

PUBLIC_BUCKET = "commoncrawl"  # the name Common Crawl's bucket has; here a local stand-in
CC_PREFIX = "crawl-data/CC-MAIN-2099-01/segments/1700000000000.00/warc/"


class CountingReader(ObjectReader):
    """An ObjectReader that records the size of every read it is asked for and every GET it opens."""

    def __init__(self, store: ObjectStore, key: str):
        super().__init__(store, key)
        self.read_sizes: list[int] = []
        self.bytes_read = 0
        self.gets = 0

    def readinto(self, buffer) -> int:
        opening = self._body is None
        count = super().readinto(buffer)
        self.read_sizes.append(len(buffer))
        self.bytes_read += count
        self.gets += opening and count > 0
        return count


def big_warc(records: int = 40, payload_bytes: int = 120_000) -> bytes:
    """A WARC of ``records`` pages of incompressible text: several MB, far more than the read buffer."""
    rng = random.Random(7)
    pages = []
    for i in range(records):
        noise = base64.b64encode(rng.randbytes(payload_bytes * 3 // 4)).decode()
        pages.append((f"http://big.example/{i}.html", "text/html", html_page([EN[i % 3], noise]).encode()))
    return make_warc(pages)


def provenance(source) -> tuple[list[tuple[str, int, str]], dict]:
    counts = StageCounts("t")
    found = [(r.url, r.offset, r.record_id) for r in iter_responses(source, counts, 10**6)]
    return found, counts.to_dict()


def test_a_warc_streams_from_s3_through_a_bounded_buffer(store):
    data = big_warc()
    store.put_bytes("stream/big.warc.gz", data, "application/warc")
    buffer = 64 * 1024
    raw = CountingReader(store, "stream/big.warc.gz")
    with io.BufferedReader(raw, buffer_size=buffer) as stream:
        streamed, counts = provenance(stream)
    expected, expected_counts = provenance(io.BytesIO(data))
    assert len(data) > 3 * 1024 * 1024 and len(streamed) == 40
    assert streamed == expected and counts == expected_counts, "same records, offsets and record ids as a local read"
    assert raw.bytes_read == len(data), "every byte fetched once"
    assert raw.gets == 1, "one ranged GET streamed from start to end"
    # no read asks S3 for more than the buffer: that, not the file, is what reading holds at once
    assert max(raw.read_sizes) <= buffer < len(data) // 50, max(raw.read_sizes)


def test_a_damaged_region_is_skipped_by_seeking_in_the_s3_stream(store):
    texts = [*EN, ES[0]]
    pages = [(f"http://s/{i}.html", "text/html", html_page([texts[i], f"Page number {i}."]).encode()) for i in range(4)]
    data = bytearray(make_warc(pages))
    offsets = [offset for _url, offset, _id in provenance(io.BytesIO(bytes(data)))[0]]
    middle = (offsets[1] + offsets[2]) // 2
    data[middle : middle + 40] = b"\x00" * 40  # damage the second record's gzip member
    store.put_bytes("stream/damaged.warc.gz", bytes(data), "application/warc")
    raw = CountingReader(store, "stream/damaged.warc.gz")
    with io.BufferedReader(raw, buffer_size=4096) as stream:
        streamed, counts = provenance(stream)
    assert (streamed, counts) == provenance(io.BytesIO(bytes(data)))
    assert [url for url, _offset, _id in streamed] == ["http://s/0.html", "http://s/2.html", "http://s/3.html"]
    assert counts["dropped"]["warc_corrupt"] >= 1
    assert raw.gets >= 2, "the reader resumed with a new ranged GET after the damaged region"


def test_a_missing_object_is_one_clear_line(store):
    with pytest.raises(StorageError, match=r"s3://bitextflow/stream/nothing.warc.gz does not exist"):
        store.open_read("stream/nothing.warc.gz")


def test_the_extract_task_reads_the_shard_from_s3_without_a_local_copy(store, monkeypatch):
    pages = [(f"http://docs.example/{lang}/{i}.html", "text/html", html_page([text]).encode()) for lang, texts in
             (("en", EN), ("es", ES)) for i, text in enumerate(texts)]  # fmt: skip
    data = make_warc(pages)
    store.put_bytes("stream/crawl-00000.warc.gz", data, "application/warc")

    def no_copy(*_args, **_kwargs):
        raise AssertionError("the extract task must stream the WARC, not download it")

    monkeypatch.setattr(ObjectStore, "download_file", no_copy)
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {"crawl.seeds": [], "crawl.warcs": ["stream/crawl-00000.warc.gz"], "policy.unknown_robots_on_ingest": "allow"}
    )
    ctx = run_context(config, store, "test_extract_streams")
    documents = read_table(store, REGISTRY.run(ctx, "extract", ["stream/crawl-00000.warc.gz"])[0])
    expected = {url: (offset, record_id) for url, offset, record_id in provenance(io.BytesIO(data))[0]}
    assert len(documents) == 6
    assert set(documents["warc_key"]) == {"stream/crawl-00000.warc.gz"}
    assert {
        u: (o, r) for u, o, r in zip(documents["url"], documents["warc_offset"], documents["warc_record_id"], strict=True)
    } == expected


# -- crawl.warc_buckets: a public bucket on another endpoint -------------------------------------------
class PublicSeaweedServer(SeaweedServer):
    """SeaweedFS with anonymous Read and List on ``PUBLIC_BUCKET`` (and nothing on the other buckets)."""

    def _write_identity(self) -> Path:
        path = super()._write_identity()
        identity = json.loads(path.read_text(encoding="utf-8"))
        identity["identities"].append({"name": "anonymous", "actions": [f"Read:{PUBLIC_BUCKET}", f"List:{PUBLIC_BUCKET}"]})
        path.write_text(json.dumps(identity), encoding="utf-8")
        return path


@pytest.fixture(scope="module")
def public_s3(tmp_path_factory):
    with PublicSeaweedServer(tmp_path_factory.mktemp("public-s3"), buckets=[PUBLIC_BUCKET, "private-warcs"]) as server:
        client = server.client()  # the owner uploads; the pipeline never sees these keys
        for index, (lang, texts) in enumerate((("en", EN), ("es", ES))):
            pages = [(f"http://cc.example/{lang}/{i}.html", "text/html", html_page([t]).encode()) for i, t in enumerate(texts)]
            key = f"{CC_PREFIX}CC-MAIN-20990101000000-20990101010000-0000{index}.warc.gz"
            client.put_object(Bucket=PUBLIC_BUCKET, Key=key, Body=make_warc(pages))
        client.put_object(Bucket="private-warcs", Key="a.warc.gz", Body=make_warc([("http://p/", "text/html", b"<p>x</p>")]))
        yield server


def public_config(public_s3, locations: list[str]):
    return load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {
            "crawl.seeds": [],
            "crawl.warcs": locations,
            "policy.unknown_robots_on_ingest": "allow",  # made-up hosts: no robots.txt to fetch
            "crawl.warc_buckets": {
                bucket: {"endpoint_url": public_s3.endpoint_url, "anonymous": True} for bucket in (PUBLIC_BUCKET, "private-warcs")
            },
        }
    )


def test_a_public_bucket_on_another_endpoint_is_read_anonymously(store, public_s3):
    config = public_config(public_s3, [f"s3://{PUBLIC_BUCKET}/{CC_PREFIX}*.warc.gz"])
    ctx = run_context(config, store, "test_extract_public_bucket")
    references = REGISTRY.run(ctx, "crawl")
    assert references == [
        f"s3://{PUBLIC_BUCKET}/{CC_PREFIX}CC-MAIN-20990101000000-20990101010000-0000{i}.warc.gz" for i in (0, 1)
    ]
    documents = pd.concat([read_table(store, REGISTRY.run(ctx, "extract", [reference])[0]) for reference in references])
    assert sorted(documents["language"]) == ["en"] * 3 + ["es"] * 3
    assert set(documents["warc_key"]) == set(references)
    assert store.exists(ctx.key("extract", "CC-MAIN-20990101000000-20990101010000-00000.sentences.parquet"))


def test_a_bucket_that_is_not_public_is_one_clear_line(store, public_s3):
    ctx = run_context(public_config(public_s3, ["s3://private-warcs/a.warc.gz"]), store, "test_extract_private_bucket")
    with pytest.raises(
        (StageError, StorageError), match="refused an anonymous \\(unsigned\\) request to check s3://private-warcs/a"
    ):
        REGISTRY.run(ctx, "crawl")
