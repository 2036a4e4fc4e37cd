"""A run from a Common Crawl index (``crawl.index``) on the real S3 server: a generated Common Crawl
(:mod:`bitextflow_local.localsite.ccindex`: 40 sites, 8 of them bilingual, two crawls) in a bucket of its own, read
with Arrow's scanner and fetched by ranged GETs. Selection, byte identity, each record's place in Common Crawl kept
for its documents, and a fetch task SIGKILLed and retried."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from bitextflow.classify.baseline import SvmClassifier
from bitextflow.classify.data import LabelledSentence
from bitextflow.classify.inference import as_json
from bitextflow.classify.model import load_model, save_model
from bitextflow.config import load_pair_config
from bitextflow.release.documents import mean_distribution
from bitextflow.stages.cc_fetch import CcFetch
from bitextflow.stages.document_sides import document_sentences
from bitextflow.stages.monolingual import Monolingual
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline, run_stage
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.tables import read_table
from bitextflow.text.urls import site_partition
from bitextflow_local.localsite.ccindex import BUCKET, build_index
from tests.integration.test_commoncrawl_optouts import fetch_counts
from tests.support import BUCKET as RUN_BUCKET
from tests.support import ROOT, wait_for

CRAWLS = ("CC-MAIN-2099-02", "CC-MAIN-2099-01")  # the first listed wins a URL captured in both
SVM_SENTENCES = {
    "computing": [
        "Install the package and edit its configuration file.",
        "The kernel loads the driver module at boot.",
        "Run the command in a terminal as root.",
        "The server stores its data on the disk.",
    ],
    "Other": [
        "We walked along the river before dinner.",
        "The garden is full of roses in June.",
        "She cooked soup for the whole family.",
        "The children played football in the park.",
    ],
}


@pytest.fixture(scope="module")
def generated(s3_server):
    """The generated Common Crawl of 40 sites, written once for the module."""
    store = ObjectStore(StorageSettings.from_env(s3_server.env()), BUCKET)
    store.ensure_bucket()
    return build_index(store, sites=40, crawls=CRAWLS)


def partition_of_name(key: str) -> int:
    """``.../cc-00003-00001.warc.gz`` -> 3."""
    return int(key.rsplit("/", 1)[1].split("-")[1])


def index_run(generated, run_id: str, **overrides):
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        generated.overrides() | {"extract.site_partitions": 4} | overrides
    )
    return run_context(config, ObjectStore.from_env(RUN_BUCKET), run_id)


def assert_fetched_as_stored(ctx, generated, shards: list[str]) -> dict[str, list[str]]:
    """Every record of every shard is byte for byte the record the index points at; returns each shard's URLs."""
    source = ObjectStore.from_env(generated.bucket)
    where = {row.capture.url: row for row in generated.selected()}
    urls = {}
    for key in shards:
        data = ctx.store.get_bytes(key)
        members = []
        for record in ArchiveIterator(io.BytesIO(data)):
            url = record.rec_headers.get_header("WARC-Target-URI")
            record.content_stream().read()
            members.append(url)
        expected = b"".join(source.get_range(where[url].warc_filename, where[url].offset, where[url].length) for url in members)
        assert data == expected, f"{key}: the fetched records are the stored records, in order, nothing else"
        urls[key] = members
    return urls


@pytest.fixture(scope="module")
def indexed(s3_server, generated, tmp_path_factory):
    """One index run of the generated Common Crawl, shared by the module's tests, up to the documents gate: the index
    stages, extraction and the site partitions (context and each stage's outputs). No gate, alignment or encoder; its
    domain classifier is a small SVM (a real one, trained here in milliseconds on the handful of sentences above)."""
    folder = tmp_path_factory.mktemp("svm")
    sentences = [
        LabelledSentence(text, label, f"site-{i}", "en") for label, texts in SVM_SENTENCES.items() for i, text in enumerate(texts)
    ]
    save_model(SvmClassifier.train(sentences, list(SVM_SENTENCES), min_count=1), folder, {"pair": "en-es"})
    with pytest.MonkeyPatch.context() as env:  # the module's tests share the run: s3_env is a test's own
        for name, value in s3_server.env().items():
            env.setenv(name, value)
        ctx = index_run(generated, "cc-documents", **{"domain.classifier": str(folder), "mono.classifier_sentences": 3})
        yield ctx, run_pipeline(ctx, until="gate_documents")


def test_selection_picks_exactly_the_bilingual_sites_and_fetches_their_pages_once(indexed, generated):
    ctx, outputs = indexed
    index_stages = ["cc_sites", "cc_select", "cc_records", "cc_fetch"]
    assert list(outputs)[:5] == [*index_stages, "extract"] and "crawl" not in outputs, "the index stages replace the crawl"
    sites = read_table(ctx.store, outputs["cc_select"])
    assert set(sites["domain"]) == generated.bilingual_sites
    assert len(generated.bilingual_sites) == 8 and generated.sites == 40
    selection = ctx.store.get_json(ctx.key("cc_select", "cc_select.counts.json"))
    assert selection["in"] == selection["kept"] + sum(selection["dropped"].values())
    by_shard = assert_fetched_as_stored(ctx, generated, outputs["cc_fetch"])
    urls = [url for members in by_shard.values() for url in members]
    assert len(urls) == len(set(urls)), "a URL captured in both crawls is fetched once"
    assert set(urls) == {row.capture.url for row in generated.selected()}
    fetched = fetch_counts(ctx)  # the pages' counts, not the robots.txt captures' (cc_fetch_robots)
    assert sum(counts["kept"] for counts in fetched) == len(urls)
    assert sum(counts["dropped"].get("same_url_captured_before", 0) for counts in fetched) > 0
    for key, members in by_shard.items():  # a shard holds its site partition's pages only: extract writes one a file
        assert {site_partition(url, 4) for url in members} == {partition_of_name(key)}


@pytest.fixture(scope="module")
def annotated(indexed):
    """The shared index run's documents, deduplicated and annotated with no sentence pair classified (context and
    ``(partition, line)`` of each)."""
    ctx, outputs = indexed
    REGISTRY.run(ctx, "deduplicate", outputs["partition"])
    run_stage(ctx, Monolingual, Monolingual(ctx).plan([]))
    annotated = [key for key in ctx.store.list_keys(ctx.key("monolingual", "")) if key.endswith(".documents.parquet")]
    tables = [read_table(ctx.store, key, columns=["partition", "document"]) for key in annotated]
    lines = [(int(partition), json.loads(document)) for table in tables for partition, document in table.itertuples(index=False)]
    assert lines, "the generated sites' pages make documents"
    return ctx, lines


def test_each_document_of_an_index_run_names_its_record_in_common_crawl(annotated, generated):
    """``source.commoncrawl`` of every annotated document is where the index located its record: cc_fetch keeps each
    record's place in its shard beside the shard, and extract's offsets are those places."""
    where = {row.capture.url: row for row in generated.selected()}
    for _, line in annotated[1]:
        row = where[line["url"]]
        assert line["source"]["kind"] == "commoncrawl"
        assert line["source"]["commoncrawl"] == {"warc_filename": row.warc_filename, "offset": row.offset, "length": row.length}


def test_a_document_no_sentence_pair_came_from_gets_the_mean_distribution_of_its_own_sentences(annotated):
    """None of the run's documents is aligned, yet each gets the classifier's distribution: the mean over at most
    ``mono.classifier_sentences`` (here 3) of its distinct sentences, its first, its last and one between."""
    ctx, lines = annotated
    classifier = load_model(Path(ctx.config.domain.classifier), "en-es")[0]
    ids_by_partition = defaultdict(set)
    for partition, line in lines:
        ids_by_partition[partition].add(line["id"])
    sentences = {partition: document_sentences(ctx, partition, ids) for partition, ids in ids_by_partition.items()}
    for partition, line in lines:
        stored = sentences[partition].get(line["id"], [])
        distinct = list(dict.fromkeys(text.strip() for _, text, _, _ in stored))
        domain = line["domain"]
        if not distinct:
            assert domain["classifier"] is None and domain["classifier_from"] is None, line["url"]
            continue
        sample = distinct if len(distinct) <= 3 else [distinct[0], distinct[round((len(distinct) - 1) / 2)], distinct[-1]]
        expected = mean_distribution(as_json(classifier.predict_proba(sample), classifier.labels))
        assert domain["classifier"] == pytest.approx(expected, abs=1e-4), line["url"]
        assert domain["classifier_from"] == "text" and domain["classifier_sentences"] == len(sample), line["url"]
    assert sum(line["domain"]["classifier"] is not None for _, line in lines) > len(lines) / 2


def test_dag_of_an_index_pair_starts_with_the_index_stages():
    from bitextflow_airflow.pair_dag import build_pair_dag

    path = ROOT / "include" / "pairs" / "examples" / "commoncrawl" / "en-es.yaml"
    dag = build_pair_dag(load_pair_config(path), path)
    order = [task.task_id for task in dag.topological_sort()]
    assert order[:8] == [
        "cc_sites_plan", "cc_sites", "cc_select", "cc_records_plan", "cc_records", "cc_fetch_plan", "cc_fetch", "extract_plan",
    ]  # fmt: skip
    assert "crawl" not in order and "extract" in dag.get_task("extract_plan").downstream_task_ids


def test_a_fetch_task_killed_and_retried_loses_and_duplicates_nothing(s3_env):
    # 400 sites (1,200 records of about 540 bytes, 694 of them admitted by their hosts' robots.txt), one partition,
    # shards of 100 kB, one GET at a time: the task writes four shards, and is killed after the first
    store = ObjectStore.from_env("commoncrawl-kill")
    store.ensure_bucket()
    generated = build_index(store, sites=400)
    ctx = index_run(generated, "cc-kill", **{"extract.site_partitions": 1, "crawl.warc_max_bytes": 100_000})
    ctx = run_context(ctx.config.with_overrides({"crawl.index.fetch_concurrency": 1}), ctx.store, ctx.run_id)
    outputs = run_pipeline(ctx, until="cc_fetch")
    (inputs_key,) = REGISTRY.get("cc_fetch")(ctx).plan(outputs["cc_records"])
    checkpoint = ctx.key("cc_fetch", "cc-00000.checkpoint.json")
    code = (
        "import json, sys\n"
        "from bitextflow.config import PairConfig\n"
        "from bitextflow.stages.cc_fetch import CcFetch\n"
        "from bitextflow.stages.registry import run_context, run_stage\n"
        "from bitextflow.storage import ObjectStore\n"
        "config = PairConfig.model_validate(json.loads(sys.argv[1]))\n"
        "run_stage(run_context(config, ObjectStore.from_env(sys.argv[2]), sys.argv[3]), CcFetch, [sys.argv[4]])\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("include", "tools", "plugins"))}
    config_json = json.dumps(ctx.config.model_dump(mode="json"))
    task = subprocess.Popen([sys.executable, "-c", code, config_json, RUN_BUCKET, ctx.run_id, inputs_key], env=env)
    try:

        def first_shard_written() -> bool:
            assert task.poll() is None, f"the task ended (exit {task.returncode}) before it wrote a shard"
            return ctx.store.exists(checkpoint) and bool(ctx.store.get_json(checkpoint)["shards"])

        wait_for(first_shard_written, f"the task's first shard in {checkpoint}", seen=lambda: "no shard", poll_s=0.02)
        task.send_signal(signal.SIGKILL)
    finally:
        task.wait()
    done_before = ctx.store.get_json(checkpoint)["shards"]
    written_before = ctx.store.last_modified(ctx.key("cc_fetch", "cc-00000-"))
    shards = run_stage(ctx, CcFetch, [inputs_key])
    assert len(done_before) < len(shards), "the kill came before the task's last shard"
    assert shards == [ctx.key("cc_fetch", f"cc-00000-{n:05d}.warc.gz") for n in range(len(shards))]
    after = ctx.store.last_modified(ctx.key("cc_fetch", "cc-00000-"))
    for name in done_before:
        assert after[ctx.key("cc_fetch", name)] == written_before[ctx.key("cc_fetch", name)], (
            f"{name} was kept, not fetched again"
        )
    urls = [url for members in assert_fetched_as_stored(ctx, generated, shards).values() for url in members]
    assert sorted(urls) == sorted(row.capture.url for row in generated.selected()), "every record once, none lost"
    counts = ctx.store.get_json(ctx.key("cc_fetch", "cc-00000.counts.json"))
    assert counts["kept"] == len(urls) and counts["in"] == counts["kept"] + sum(counts["dropped"].values())
