"""Storage errors a user can act on, and every stage run from the CLI without Airflow.

The tests of this module against real services; those that need none are tests/unit/test_storage_cli.py's.
"""

import json

import pytest

from bitextflow import cli
from bitextflow.config import load_pair_config
from bitextflow.errors import StorageError
from bitextflow.stages.registry import REGISTRY
from bitextflow.storage import StorageSettings
from tests.support import ROOT
from tests.unit.test_storage_cli import crawl_context


def test_bad_credentials_fail_with_one_line_and_never_show_the_secret(s3_server):
    secret = "not-the-right-secret-0123456789"
    settings = StorageSettings(s3_server.endpoint_url, s3_server.access_key_id, secret)
    with pytest.raises(StorageError) as caught:
        REGISTRY.run(crawl_context(settings), "crawl")
    message = str(caught.value)
    assert "rejected the credentials" in message and "BITEXTFLOW_S3_SECRET_ACCESS_KEY" in message
    assert secret not in message and secret not in repr(settings)


def test_store_round_trip_and_missing_key(store):
    key = store.put_json("tests/roundtrip.json", {"ñ": 1})
    assert store.get_json(key) == {"ñ": 1}
    assert store.exists(key) and not store.exists("tests/absent.json")
    assert "tests/roundtrip.json" in store.list_keys("tests/")
    with pytest.raises(StorageError, match="does not exist"):
        store.get_bytes("tests/absent.json")


def test_every_stage_runs_from_the_cli_without_airflow(s3_env, site, capsys):
    """Each stage as its own command, finding its inputs in S3 by run id, like a user would."""
    run_id = "cli_stages"
    common = ["--pair", "en-es", "--run-id", run_id]
    small = [
        "--set",
        f'crawl.seeds=["{site.base_url}"]',
        "--set",
        "crawl.max_pages=80",
        "--set",
        "gate.min_sentence_pairs=1",
        "--set",
        "gate.max_volume_drop=null",
    ]
    for stage in REGISTRY.run_stages(load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")):
        assert cli.main([stage.name.replace("_", "-"), *common, *small]) == 0, stage.name
    capsys.readouterr()
    assert cli.main(["releases", "list", "--pair", "en-es", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert any(entry["run_id"] == run_id and entry["sentence_pairs"] > 0 for entry in listed)


def test_stage_without_inputs_names_the_stage_to_run_first(s3_env, capsys):
    assert cli.main(["score", "--pair", "en-es", "--run-id", "never_ran"]) == 2
    assert "run `bitextflow align-sentences` first" in capsys.readouterr().err


def test_read_rows_takes_the_rows_and_columns_asked_for_by_ranged_reads(store):
    """align_sentences reads the sentences of its own documents, not whole extract shards into memory."""
    from bitextflow import records
    from bitextflow.records import Sentence
    from bitextflow.storage.tables import read_rows, write_table

    rows = [Sentence(f"d{d}", f"http://h/{d}", "en", p, "p", 0, f"text {d}.{p}", False) for d in range(50) for p in range(20)]
    keys = [write_table(store, f"tests/rows/{part}.sentences.parquet", records.frame_of(rows[part::2], records.SENTENCES),
                        records.SENTENCES) for part in range(2)]  # fmt: skip
    opened = []
    original = store.open_read
    store.open_read = lambda key, *args: opened.append(key) or original(key, *args)  # a spy on the real reader
    frame = read_rows(store, keys, records.SENTENCES, ["doc_id", "paragraph_index", "text"], "doc_id", {"d3", "d7"})
    assert list(frame.columns) == ["doc_id", "paragraph_index", "text"]
    assert sorted(set(frame["doc_id"])) == ["d3", "d7"] and len(frame) == 40
    assert opened == keys, "each shard is read through a seekable ranged stream"
    empty = read_rows(store, [], records.SENTENCES, ["doc_id", "text"], "doc_id", {"d3"})
    assert list(empty.columns) == ["doc_id", "text"] and empty.empty


def test_every_count_of_a_run_of_thousands_of_objects_is_found(store) -> None:
    """A run's prefix is ``<pair>/<run>/``: listed as ``<pair>/<run>//`` (no key has it on S3), SeaweedFS gave the
    first 1,000 keys only, and a run of 1,500 WARC files reported 200 of its 1,500 pages in its release's counts."""
    from concurrent.futures import ThreadPoolExecutor

    from bitextflow.catalog.status import collect_counts
    from bitextflow.counts import StageCounts
    from bitextflow.storage.layout import stage_key

    shards = 1_200
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(
            lambda i: store.put_json(stage_key("en-es", "big_run", "extract", f"file-{i:05d}.documents.counts.json"),
                                     StageCounts("extract_documents", 1, 1).to_dict()),
            range(shards),
        ))  # fmt: skip
    (extract,) = collect_counts(store, "en-es", "big_run", ("extract",))
    assert (extract.stage, extract.items_in) == ("extract_documents", shards)
