"""The smart strategy's URL classifiers: synthetic negatives, training, versions in real S3, loading, fallback.

The models are fine-tuned from the real converted multilingual-e5-small, cut to one layer and a few
steps so that training takes seconds on two cores; the crawl is of the local site, the store SeaweedFS.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

from bitextflow import records
from bitextflow.align.documents import align_by_url
from bitextflow.catalog.checkpoints import STATE_NAME, crawl_log
from bitextflow.catalog.models import list_url_versions, publish_url_models, resolve_url_models
from bitextflow.config import load_pair_config
from bitextflow.crawl.scoring import PageView, PairContext
from bitextflow.crawl.smart_scorer import ModelScorer
from bitextflow.crawl.urls import Link, parse_html
from bitextflow.errors import StageError
from bitextflow.models import url_models, url_training, url_training_data
from bitextflow.records import Document
from bitextflow.stages.base import RunContext
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.tables import write_table
from bitextflow.text.urls import url_text
from tests.support import ROOT

KEYS = ["intro", "setup", "usage", "faq", "about", "news", "contact", "help", "install", "upgrade"]
PAGES = [(f"http://docs.test/{lang}/{key}.html", lang) for key in KEYS for lang in ("en", "es")]
PAIRS = [(f"http://docs.test/en/{key}.html", f"http://docs.test/es/{key}.html") for key in KEYS]
TINY = url_training.TrainingSettings(
    layers=1, trained_layers=1, max_length=32, epochs=40, batch_size=16, learning_rate=1e-3, max_steps=40, held_out_share=0.2
)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine's two cores are shared
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("url-models")
    url_training.train_url_models(PAGES, PAIRS, folder, TINY, required_languages=("en", "es"))
    return folder


def test_url_text_keeps_the_words_of_host_path_and_query():
    assert url_text("https://es.example.org:8080/docs/ch01.es.html?lang=es") == "es example org docs ch01 es html lang es"


def test_parallel_examples_are_the_seed_negatives_around_each_positive():
    examples = url_training_data.parallel_examples(PAIRS, PAGES, random.Random(0))
    positives = [e for e in examples if e.label == 1]
    assert len(positives) == 2 * len(PAIRS) and {e.kind for e in positives} == {"positive"}
    kinds = {e.kind for e in examples if e.label == 0}
    assert kinds == {"random_match", "max_jaccard", "removed_token", "monolingual"}
    texts = {(e.text_a, e.text_b) for e in positives}
    for example in examples:
        if example.label == 0:
            assert (example.text_a, example.text_b) not in texts, f"a negative is a true pair: {example}"
        if example.kind == "monolingual":
            assert example.text_a.split()[2] == example.text_b.split()[2], "monolingual pairs share the language"
    # a group holds both orders of one pair and their negatives, so a held-out split keeps them together
    assert len({e.group for e in examples}) == len(PAIRS)


def test_wmt16_gold_pairs_add_url_pair_examples_from_other_sites():
    from tests.support import eval_dir

    gold = url_training_data.read_gold_pairs(eval_dir("wmt16_docalign_test_gold") / "test.pairs")
    assert len(gold) == 2402 and all(a.startswith("http") and b.startswith("http") for a, b in gold[:50])
    # gold pairs beside a crawl's own: their URLs are in no crawl log, yet each gets the seed's negatives
    site_pages = [("http://h/en/a.html", "en"), ("http://h/es/a.html", "es"), ("http://h/es/b.html", "es")]
    examples = url_training_data.parallel_examples(
        [("http://h/en/a.html", "http://h/es/a.html"), *gold[:20]], site_pages, random.Random(0)
    )
    kinds = {kind: sum(e.kind == kind for e in examples) for kind in ("positive", "random_match", "max_jaccard", "monolingual")}
    assert kinds["positive"] == 2 * 21 and kinds["random_match"] >= 2 * 20 and kinds["max_jaccard"] >= 2 * 20


def test_pages_from_crawl_log_count_what_they_leave_out():
    lines = [
        {"url": "http://a/en", "outcome": "fetched", "status": 200, "detected_language": "en"},
        {"url": "http://a/x", "outcome": "fetched", "status": 200, "detected_language": ""},
        {"url": "http://a/r", "outcome": "robots_disallowed", "status": 0, "detected_language": ""},
        {"url": "http://a/404", "outcome": "fetched", "status": 404, "detected_language": "en"},
    ]
    pages, counts = url_training_data.pages_from_crawl_log(lines)
    assert pages == [("http://a/en", "en")]
    assert counts.kept == 1 and counts.dropped == {"no_language_detected": 1, "not_downloaded": 2}


def test_a_tiny_model_ranks_the_other_language_first(trained):
    metadata = json.loads((trained / url_models.METADATA_FILENAME).read_text())
    assert metadata["languages"] == ["en", "es"] and metadata["steps"] == {"language": 40, "parallel": 40}
    assert metadata["training_data"]["pairs"] == len(PAIRS) and metadata["metrics"]["parallel"]["examples"] > 0
    assert sum(f.stat().st_size for f in trained.rglob("*")) < 30_000_000, "only trained weights are saved"
    models = url_models.UrlClassifiers(trained)
    spanish, english = "http://other.test/es/guide.html", "http://other.test/en/guide.html"
    p_es = models.language_probabilities([spanish, english], "es")
    assert p_es[0] > 0.5 > p_es[1]
    assert models.language_probabilities([spanish], "fr") == [0.0], "a language without training pages"
    scorer = ModelScorer(PairContext("en", "es"), models)
    page = PageView(english, 0, "en", parse_html(b"<title>t</title><p>x</p>", english))
    to_spanish, to_english = scorer.score(page, [Link(spanish, "", ""), Link("http://other.test/en/next.html", "", "")])
    assert to_spanish > to_english


def test_versions_round_trip_through_s3_and_latest_picks_the_newest(trained, store, monkeypatch, tmp_path):
    monkeypatch.setenv("BITEXTFLOW_CACHE", str(tmp_path / "cache"))
    pair = "en-es-test-versions"
    assert resolve_url_models("latest", store, pair) is None, "no version yet: the caller falls back"
    first = publish_url_models(store, pair, trained)
    second = publish_url_models(store, pair, trained)
    assert first.endswith(f"models/{pair}/url/v1/") and second.endswith(f"models/{pair}/url/v2/")
    assert list_url_versions(store, pair) == [1, 2]
    latest = url_models.load_url_models(resolve_url_models("latest", store, pair)[0])
    assert latest is not None and latest.version == "v2"
    assert json.loads((latest.folder / url_models.METADATA_FILENAME).read_text())["pair"] == pair
    pinned = url_models.load_url_models(resolve_url_models(first)[0])  # an s3:// URI alone: the store comes from the environment
    assert pinned is not None and pinned.version == "v1"
    assert str(tmp_path / "cache") in str(pinned.folder), "versions are cached locally"
    assert pinned.language_probabilities(["http://x.test/es/a.html"], "es") == latest.language_probabilities(
        ["http://x.test/es/a.html"], "es"
    )
    # a half-uploaded version (no metadata yet) is not a version
    store.put_bytes(f"models/{pair}/url/v3/language/config.json", b"{}")
    assert list_url_versions(store, pair) == [1, 2]
    with pytest.raises(StageError, match="v3.*train-url-models"):
        resolve_url_models(store.uri(f"models/{pair}/url/v3/"))


def test_missing_or_corrupt_models_name_the_path_and_how_to_train(trained, tmp_path):
    with pytest.raises(StageError, match=r"/nowhere/url-models .*no such folder.*bitextflow train-url-models"):
        url_models.load_url_models("/nowhere/url-models")
    broken = tmp_path / "broken"
    shutil.copytree(trained, broken)
    (broken / "parallel" / url_models.TRAINED_FILENAME).write_bytes(b"not safetensors")
    with pytest.raises(StageError, match=rf"{broken} cannot be loaded \(parallel: .*train-url-models"):
        url_models.load_url_models(str(broken))
    (broken / url_models.METADATA_FILENAME).write_text("{")
    with pytest.raises(StageError, match=rf"{broken} cannot be loaded \(url-models.json"):
        url_models.load_url_models(str(broken))
    with pytest.raises(StageError, match="s3://<bucket>/models/<pair>/url/latest"):
        resolve_url_models("latest")


def test_train_task_publishes_a_version_that_the_next_smart_crawl_uses(site, s3_server, monkeypatch, tmp_path):
    monkeypatch.setenv("BITEXTFLOW_CACHE", str(tmp_path / "cache"))
    pair_name = "en-es"
    store = ObjectStore(StorageSettings.from_env(s3_server.env()), "bitextflow-url-models")
    store.ensure_bucket()
    overrides = {
        "storage.bucket": store.bucket,
        "crawl.seeds": [site.base_url],
        "crawl.max_pages": 60,
        "crawl.strategy": "smart",
        "crawl.url_models": "latest",
        "crawl.url_model_kind": "encoder",
        "crawl.url_model_layers": 1,
        "crawl.url_model_trained_layers": 1,
        "crawl.url_model_epochs": 1,
        "crawl.url_model_max_length": 32,
    }
    config = load_pair_config(ROOT / "include" / "pairs" / f"{pair_name}.yaml").with_overrides(overrides)
    first = run_context(config, store, "url_models_first")
    REGISTRY.run(first, "crawl")
    assert _strategy_used(first) == "url-rules", "no version yet: smart falls back to url-rules"
    log = list(crawl_log(store, first.config.pair, first.run_id))
    # document pairs as align_documents finds them from these pages' URLs and languages
    pages, _counts = url_training_data.pages_from_crawl_log(log)
    documents = [Document.of_text(url, url, language) for url, language in pages]
    pairs, _unmatched = align_by_url(documents, "en", "es")
    assert pairs, "the first 60 pages hold translated pairs"
    rows = pd.DataFrame(
        [
            {
                "doc_id_a": p.url_a,
                "doc_id_b": p.url_b,
                "url_a": p.url_a,
                "url_b": p.url_b,
                "method": p.method,
                "score": p.score,
                "partition": 0,
            }
            for p in pairs
        ]  # fmt: skip
    )
    key = write_table(store, first.key("align_documents", "docpairs-part-00000-00000.parquet"), rows, records.DOCUMENT_PAIRS)
    uri = REGISTRY.run(first, "train_url_models", [key])
    assert uri == store.uri(f"models/{pair_name}/url/v1/")
    pointer = store.get_json(first.key("train_url_models", "url-models.json"))
    assert pointer["uri"] == uri and pointer["crawl_log"]["kept"] == len(pages) and pointer["crawl_log"]["in"] == len(log)
    metadata = store.get_json(f"models/{pair_name}/url/v1/{url_models.METADATA_FILENAME}")
    assert metadata["training_data"]["crawl_log"] == pointer["crawl_log"]
    assert metadata["training_data"]["pairs"] == len(pairs) and metadata["settings"]["layers"] == 1

    second = run_context(config.with_overrides({"crawl.max_pages": 20}), store, "url_models_second")
    REGISTRY.run(second, "crawl")
    assert _strategy_used(second) == "smart"
    # the log is in the order fetches finish: the guessed /sitemap.xml's 404 may come before the seed's page
    fetched = [line for line in crawl_log(store, second.config.pair, second.run_id) if line["outcome"] == "fetched"]
    assert fetched[0]["url"] == site.base_url and fetched[0]["priority"] == 1.0, "seeds first"


def _strategy_used(ctx: RunContext) -> str:
    return json.loads(gzip.decompress(ctx.store.get_bytes(ctx.key("crawl", STATE_NAME))))["strategy_used"]
