"""Ingesting existing WARC files (``crawl.warcs``) and de-duplicating documents across extract shards.

Runs on the real SeaweedFS server: WARCs written by our own crawler's writer and by warcio the way other
crawlers write them (response records only, gzip per record) are uploaded, ingested, extracted and
de-duplicated before document alignment.


The tests of this module against real services; those that need none are tests/unit/test_ingest_dedup.py's.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from lxml import etree

from bitextflow.catalog.status import collect_counts
from bitextflow.config import load_pair_config
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import StageError
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline
from bitextflow.storage import ObjectStore
from bitextflow.storage.tables import read_table
from tests.support import ROOT, cross_shard_duplicates
from tests.unit.test_extract import make_warc
from tests.unit.test_ingest_dedup import GUIDE_EN, GUIDE_ES, NETWORK_EN, page

NETWORK_ES = [
    "Las interfaces de red se describen en un único archivo de configuración leído al arrancar.",
    "Cada interfaz tiene un nombre, una familia de direcciones y un método como estático o dhcp.",
    "Una dirección estática necesita la dirección, la máscara de red y la pasarela de la red.",
    "Las interfaces inalámbricas necesitan además el nombre de la red y la contraseña que la protege.",
]


def own_writer_warc(directory: Path, pages: list[tuple[str, bytes]]) -> Path:
    """A shard as our crawler writes it: request and response records, a warcinfo record, gzip per record."""
    written: list[Path] = []

    def keep(local: Path, name: str) -> str:
        target = directory / name
        target.write_bytes(local.read_bytes())
        written.append(target)
        return name

    writer = RotatingWarcWriter(keep, 10**9, info={"software": "bitextflow test"})
    for url, body in pages:
        writer.write_exchange(url, [("User-Agent", "test")], 200, "OK", [("Content-Type", "text/html; charset=utf-8")], body)
    writer.close()
    (path,) = written
    return path


@pytest.fixture
def ingest_context(store):
    """Two shards uploaded under ``ingest/``: one by our writer, one by warcio with response records only.

    Shard one holds the upgrade guide (en, es) and the English network page; shard two holds a copy of
    the English guide with one sentence less (a near-duplicate), a byte-identical copy of the Spanish
    guide under another URL (an exact duplicate) and the Spanish network page.
    """
    import tempfile

    site = "http://docs.example.org"
    with tempfile.TemporaryDirectory() as tmp:
        own = own_writer_warc(
            Path(tmp),
            [
                (f"{site}/en/upgrade.html", page(GUIDE_EN, "Upgrading the system")),
                (f"{site}/es/upgrade.html", page(GUIDE_ES, "Actualizar el sistema")),
                (f"{site}/en/network.html", page(NETWORK_EN, "Network configuration")),
            ],
        )
        store.put_file("ingest/own/crawl-00000.warc.gz", own, "application/warc")
    foreign = make_warc(
        [
            (f"{site}/en/upgrade-old.html", "text/html", page(GUIDE_EN[:-1], "Upgrading the system")),
            (f"{site}/es/upgrade-copy.html", "text/html; charset=utf-8", page(GUIDE_ES, "Actualizar el sistema")),
            (f"{site}/es/network.html", "text/html; charset=utf-8", page(NETWORK_ES, "Configuración de la red")),
        ]
    )
    store.put_bytes("ingest/foreign/site-a.warc.gz", foreign, "application/warc")
    store.put_bytes("ingest/foreign/notes.txt", b"not a WARC: never a shard", "text/plain")
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {
            "crawl.seeds": [],
            "crawl.warcs": ["ingest/own/crawl-00000.warc.gz", "s3://bitextflow/ingest/foreign/*"],
            "policy.unknown_robots_on_ingest": "allow",  # made-up hosts: no robots.txt to fetch
            "extract.export_formats": ["xml", "jsonl"],
        }
    )
    return run_context(config, store, "test_ingest_dedup")


def test_ingested_warcs_are_extracted_and_deduplicated_across_shards(ingest_context):
    ctx = ingest_context
    warc_keys = REGISTRY.run(ctx, "crawl")
    assert warc_keys == ["ingest/own/crawl-00000.warc.gz", "ingest/foreign/site-a.warc.gz"]
    assert ctx.store.get_json(ctx.key("crawl", "crawl.counts.json"))["kept"] == 2

    documents_keys = [REGISTRY.run(ctx, "extract", [key])[0] for key in warc_keys]
    documents = pd.concat([read_table(ctx.store, key) for key in documents_keys], ignore_index=True)
    assert len(documents) == 6, "within each shard nothing is a duplicate"
    own_doc = documents[documents["url"].str.endswith("/en/upgrade.html")].iloc[0]
    assert own_doc["warc_key"] == warc_keys[0] and own_doc["warc_record_id"].startswith("<urn:uuid:")

    exported = ctx.store.list_keys(ctx.key("extract", "export/site-a/"))
    assert sorted(exported) == sorted(
        [ctx.key("extract", f"export/site-a/{doc_id}.xml") for doc_id in read_table(ctx.store, documents_keys[1])["doc_id"]]
        + [ctx.key("extract", "export/site-a/documents.jsonl.gz")]
    )
    xml = etree.fromstring(ctx.store.get_bytes(exported[0]))  # well-formed
    assert xml.tag == "{http://www.xces.org/schema/2003}cesDoc"
    lines = gzip.decompress(ctx.store.get_bytes(ctx.key("extract", "export/site-a/documents.jsonl.gz"))).splitlines()
    assert [json.loads(line)["url"] for line in lines] == list(read_table(ctx.store, documents_keys[1])["url"])

    partition_keys = REGISTRY.run(ctx, "partition", documents_keys)
    assert len(partition_keys) == 1, "one site: one partition"
    REGISTRY.run(ctx, "deduplicate", partition_keys)
    pair_keys = REGISTRY.run(ctx, "align_documents", partition_keys)
    pairs = pd.concat([read_table(ctx.store, key) for key in pair_keys])
    assert sorted(zip(pairs["url_a"].str.rsplit("/", n=1).str[1], pairs["url_b"].str.rsplit("/", n=1).str[1], strict=True)) == [
        ("network.html", "network.html"),
        ("upgrade.html", "upgrade.html"),
    ]
    removed = cross_shard_duplicates(ctx)
    by_url = dict(
        zip(
            removed["url"].str.split("/", n=3).str[3],
            zip(removed["drop_reason"], removed["duplicate_of"], strict=True),
            strict=True,
        )
    )
    doc_id = dict(zip(documents["url"].str.split("/", n=3).str[3], documents["doc_id"], strict=True))
    assert by_url == {
        "en/upgrade-old.html": ("near_duplicate_lsh", doc_id["en/upgrade.html"]),  # the longer one stays
        "es/upgrade-copy.html": ("duplicate_content_cross_shard", doc_id["es/upgrade.html"]),  # the first one stays
    }
    counts = ctx.store.get_json(ctx.key("deduplicate", "deduplicate.counts.json"))
    assert counts == {
        "stage": "extract_documents_cross_shard",
        "in": 6,
        "kept": 4,
        "dropped": {"duplicate_content_cross_shard": 1, "near_duplicate_lsh": 1},
    }


def test_a_warc_in_another_bucket_is_read_from_there(store, s3_env):
    other = ObjectStore(store.settings, "bitextflow-ingest-other")
    other.ensure_bucket()
    other.put_bytes("cc/CC-MAIN-00001.warc.gz", make_warc([("http://o.example/en/a.html", "text/html", page(NETWORK_EN, "Net"))]))
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {"crawl.seeds": [], "crawl.warcs": ["s3://bitextflow-ingest-other/cc/"], "policy.unknown_robots_on_ingest": "allow"}
    )
    ctx = run_context(config, store, "test_ingest_other_bucket")
    (reference,) = REGISTRY.run(ctx, "crawl")
    assert reference == "s3://bitextflow-ingest-other/cc/CC-MAIN-00001.warc.gz"
    documents = read_table(store, REGISTRY.run(ctx, "extract", [reference])[0])
    assert list(documents["warc_key"]) == [reference]
    assert store.exists(ctx.key("extract", "CC-MAIN-00001.sentences.parquet"))


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("ingest/missing/crawl-00009.warc.gz", "crawl.warcs: s3://bitextflow/ingest/missing/crawl-00009.warc.gz does not exist"),
        ("ingest/nothing-here/", "crawl.warcs: no .warc or .warc.gz file matches s3://bitextflow/ingest/nothing-here/"),
        ("ingest/*.zip", "crawl.warcs: no .warc or .warc.gz file matches s3://bitextflow/ingest/*.zip"),
    ],
)
def test_a_location_that_names_no_warc_is_a_clear_error(store, location, message):
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {"crawl.seeds": [], "crawl.warcs": [location]}
    )
    with pytest.raises(StageError) as error:
        REGISTRY.run(run_context(config, store, "test_ingest_missing"), "crawl")
    assert str(error.value).startswith(message)


def test_two_files_with_one_name_are_refused(store):
    for folder in ("a", "b"):
        store.put_bytes(f"ingest-clash/{folder}/part.warc.gz", make_warc([("http://x/", "text/html", page(NETWORK_EN, "N"))]))
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {"crawl.seeds": [], "crawl.warcs": ["ingest-clash/"]}
    )
    with pytest.raises(StageError, match="would both be extract shard 'part'"):
        REGISTRY.run(run_context(config, store, "test_ingest_clash"), "crawl")


def test_a_shard_of_duplicates_and_a_shard_of_nothing_go_through_every_stage(store):
    """Whole shards that come to nothing (every document a copy of an earlier shard's, or no response
    record at all) once failed extract on an empty selection; every stage must take them and count them."""
    site = "http://docs.example.org"
    originals = [
        (f"{site}/en/upgrade.html", "text/html", page(GUIDE_EN, "Upgrading the system")),
        (f"{site}/es/upgrade.html", "text/html", page(GUIDE_ES + GUIDE_ES[:2], "Actualizar el sistema")),
        (f"{site}/en/network.html", "text/html", page(NETWORK_EN, "Network configuration")),
        (f"{site}/es/network.html", "text/html", page(NETWORK_ES, "Configuración de la red")),
    ]
    copies = [(url.replace(".html", "-copy.html"), kind, body) for url, kind, body in originals]
    copies[0] = (copies[0][0], "text/html", page(GUIDE_EN[:-1], "Upgrading the system"))  # near, not exact
    store.put_bytes("ingest-edges/a-originals.warc.gz", make_warc(originals), "application/warc")
    store.put_bytes("ingest-edges/b-copies.warc.gz", make_warc(copies), "application/warc")
    store.put_bytes("ingest-edges/c-empty.warc.gz", make_warc([]), "application/warc")
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {
            "crawl.seeds": [],
            "crawl.warcs": ["ingest-edges/"],
            "policy.unknown_robots_on_ingest": "allow",
            "gate.min_sentence_pairs": 1,
            "gate.min_document_pairs": 1,
            "gate.max_volume_drop": None,
        }
    )
    ctx = run_context(config, store, "test_ingest_edges")
    outputs = run_pipeline(ctx)

    documents = {key.rsplit("/", 1)[1]: len(read_table(store, key)) for key in outputs["extract"]}
    assert documents == {"a-originals.documents.parquet": 4, "b-copies.documents.parquet": 4, "c-empty.documents.parquet": 0}
    removed = cross_shard_duplicates(ctx)
    assert sorted(removed["url"]) == sorted(url for url, _kind, _body in copies)
    assert outputs["release"], "the run is released"
    for counts in collect_counts(store, ctx.config.pair, ctx.run_id, ctx.stage_order):
        summary = counts.to_dict()
        assert summary["in"] == summary["kept"] + sum(summary["dropped"].values()), summary
