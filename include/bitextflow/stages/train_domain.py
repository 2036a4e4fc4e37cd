"""Model step ``train_domain``: train, evaluate, save and publish a pair's domain classifier.

Steps: labelled sentences (``domain.training.data`` or the offline Debian set) -> label check ->
sequential split per site -> down-sampling (Other at half) -> SVM or transformer training (dev fits the
temperature) -> evaluation on test and, zero-shot, on the other language -> a model folder with its
reports and metadata -> ``models/<pair>/domain/v<N>/`` in the store -> the DVC registry (tag
``model-domain-<pair>-v<N>``). The pair DAG's runs pick the newest with ``domain.classifier: latest``, so a model is
published only when its test macro F1 reaches ``domain.training.min_test_macro_f1`` and is not below the newest
published version's on the same test sentences (:func:`publication_refusal`); else the task fails in one line.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

from bitextflow import records
from bitextflow.catalog.models import domain_prefix, publish_model, published_versions, record_in_registry
from bitextflow.classify.data import LabelledSentence, check_labels, downsample, label_crawled_sentences, read_labelled
from bitextflow.classify.model import METADATA_FILENAME, save_model
from bitextflow.classify.training import evaluate_into, prepare_split, split_cap, train_classifier
from bitextflow.config import DomainTrainingConfig, PairConfig
from bitextflow.errors import GateFailed, StageError
from bitextflow.stages.base import Resources, Stage
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import stage_key
from bitextflow.storage.tables import read_tables

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainedModel:
    folder: Path
    metadata: dict[str, Any]
    uri: str | None  # where it was published; None when not uploaded
    dvc_get: str | None = None  # how to fetch it from the DVC registry; None when not recorded there

    def summary(self) -> dict[str, Any]:
        """What the CLI prints and the Airflow task returns (XCom): where the model is and how good."""
        metrics = self.metadata["metrics"]
        return {
            "uri": self.uri,
            "dvc_get": self.dvc_get,
            "folder": str(self.folder),
            "kind": self.metadata["kind"],
            "labels": self.metadata["labels"],
            "temperature": self.metadata["temperature"],
            **{f"{name}_macro_f1": round(m["macro_f1"], 4) for name, m in metrics.items()},
            **{f"{name}_accuracy": round(m["accuracy"], 4) for name, m in metrics.items()},
        }


def with_training(config: PairConfig, **updates: Any) -> PairConfig:
    """`config` with ``domain.training`` fields replaced by the non-empty `updates` (CLI options), re-validated."""
    training = (config.domain.training or DomainTrainingConfig()).model_dump()
    training.update({name: value for name, value in updates.items() if value is not None})
    domain = config.domain.model_copy(update={"training": DomainTrainingConfig.model_validate(training)})
    return config.model_copy(update={"domain": domain})


def load_sentences(location: str, store: ObjectStore | None) -> list[LabelledSentence]:
    """A labelled JSONL from a local path or ``s3://bucket/key``."""
    if not location.startswith("s3://"):
        return read_labelled(Path(location).expanduser())
    if store is None:
        raise StageError(
            f"training data {location} is in S3 but no object store is configured; set BITEXTFLOW_S3_* or pass a local file"
        )
    bucket, _, key = location.removeprefix("s3://").partition("/")
    source = store if bucket == store.bucket else ObjectStore(store.settings, bucket)
    with tempfile.TemporaryDirectory(prefix="bitextflow-train-domain-") as scratch:
        return read_labelled(source.download_file(key, Path(scratch) / Path(key).name))


def crawled_sentences(config: PairConfig, store: ObjectStore) -> list[LabelledSentence]:
    """Source-language sentences of ``domain.training.crawl_runs``, labelled by the site they came from (DSI)."""
    training = config.domain.training or DomainTrainingConfig()
    keys = [
        key
        for run_id in training.crawl_runs
        for key in store.list_keys(stage_key(config.pair, run_id, "extract", ""))
        if key.endswith(".sentences.parquet")
    ]
    if not keys:
        raise StageError(
            f"domain.training.crawl_runs {training.crawl_runs} have no extracted sentences in {store.uri(config.pair + '/')}; check the run ids"
        )
    frame = read_tables(store, keys, records.SENTENCES)
    frame = frame[frame["language"] == config.source]
    labelled, dropped = label_crawled_sentences(frame.to_dict("records"), training.site_labels, training.other_sites)
    log.info(
        "train-domain %s: %d crawled sentences labelled, %d from unlabelled sites",
        config.pair,
        len(labelled),
        dropped["unlabelled_site"],
    )
    return labelled


def training_sentences(
    config: PairConfig, store: ObjectStore | None
) -> tuple[list[LabelledSentence], list[LabelledSentence] | None, str]:
    """(training sentences, zero-shot sentences or None, where they came from), as ``domain.training`` says."""
    training = config.domain.training or DomainTrainingConfig()
    if training.data:
        return load_sentences(training.data, store), None, training.data
    if training.crawl_runs:
        if store is None:
            raise StageError(
                "domain.training.crawl_runs needs the object store; set BITEXTFLOW_S3_* (or `bitextflow services up`)"
            )
        return crawled_sentences(config, store), None, f"crawl runs {', '.join(training.crawl_runs)}"
    from bitextflow.classify.offline import LANGUAGES, offline_set

    zero_shot = read_labelled(offline_set(config.target)) if config.target in LANGUAGES else None
    return read_labelled(offline_set(config.source)), zero_shot, f"offline Debian set ({config.source})"


def sentences_digest(test: Sequence[LabelledSentence]) -> str:
    """What a model was tested on: a digest of its test sentences and labels, in any order."""
    digest = hashlib.sha256()
    for label, text in sorted((s.label, s.text) for s in test):
        digest.update(f"{label}\t{text}\n".encode())
    return digest.hexdigest()


def publication_refusal(
    metadata: Mapping[str, Any], minimum: float, previous: Mapping[str, Any] | None, previous_name: str = "the newest version"
) -> str | None:
    """Why a trained model (its ``metadata``) may not become the newest published one, else None: its test macro F1
    is below ``minimum``, or below that of ``previous`` (the newest published version's metadata) when both were
    tested on the same sentences (``test_digest``; on other sentences the two figures do not compare)."""
    f1 = metadata["metrics"]["test"]["macro_f1"]
    if f1 < minimum:
        return f"test macro F1 {f1:.3f} is below domain.training.min_test_macro_f1 {minimum:g}"
    if previous is None or previous.get("test_digest") != metadata["test_digest"]:
        return None
    before = previous.get("metrics", {}).get("test", {}).get("macro_f1")
    if isinstance(before, int | float) and f1 < before:
        return f"test macro F1 {f1:.3f} is below {previous_name}'s {before:.3f} on the same test sentences"
    return None


def newest_published(store: ObjectStore, pair: str) -> tuple[str, dict[str, Any]] | None:
    """The newest published domain model's name (``v<N>``) and metadata, or None."""
    versions = published_versions(store, pair)
    if not versions:
        return None
    return f"v{versions[-1]}", store.get_json(f"{domain_prefix(pair)}v{versions[-1]}/{METADATA_FILENAME}")


def train_domain(
    config: PairConfig,
    store: ObjectStore | None,
    out_dir: Path | None = None,
    sentences: Sequence[LabelledSentence] | None = None,
    zero_shot: Sequence[LabelledSentence] | None = None,
    publish: bool = True,
    run_id: str | None = None,
    requested_by: Mapping[str, Any] | None = None,
) -> TrainedModel:
    """Train the pair's classifier as ``domain.training`` says; publish it unless `publish` is false or no store.
    ``requested_by`` (who started the run and what it overrode, :attr:`RunContext.provenance`) goes into the metadata,
    so that a published model says who trained it on what."""
    training = config.domain.training or DomainTrainingConfig()
    if sentences is None:
        sentences, default_zero_shot, data_source = training_sentences(config, store)
        zero_shot = default_zero_shot if zero_shot is None else zero_shot
    else:
        data_source = "sentences given by the caller"
    if zero_shot is None and training.zero_shot_data:
        zero_shot = load_sentences(training.zero_shot_data, store)
    split = prepare_split(sentences, training, data_source)
    log.info("train-domain %s: %s", config.pair, split.counts())
    started = time.perf_counter()

    def progress(step: int, steps: int, loss: float) -> None:
        if step == steps or step % 25 == 0:
            log.info("train-domain: step %d/%d, loss %.3f, %.0f s", step, steps, loss, time.perf_counter() - started)

    classifier = train_classifier(split, training, progress)
    training_seconds = time.perf_counter() - started
    folder = out_dir or Path(tempfile.mkdtemp(prefix=f"bitextflow-domain-{config.pair}-"))
    languages = sorted({s.language for s in split.train})
    metrics = {
        "test": evaluate_into(
            classifier, split.test, folder / "evaluation" / "test", f"{training.kind} on {'+'.join(languages)} test"
        )
    }
    if zero_shot:
        check_labels(zero_shot, training.labels, training.zero_shot_data or "offline zero-shot set", require_all=False)
        languages_zero = "+".join(sorted({s.language for s in zero_shot}))
        metrics["zero_shot"] = evaluate_into(
            classifier, downsample(zero_shot, split_cap(training, training.test_share), training.seed),
            folder / "evaluation" / "zero-shot", f"{training.kind} zero-shot on {languages_zero}",
        )  # fmt: skip
    metadata = {
        "pair": config.pair,
        "run_id": run_id,
        "requested_by": dict(requested_by or {}),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": data_source,
        "train_languages": languages,
        "data_counts": split.counts(),
        "test_digest": sentences_digest(split.test),
        "metrics": {name: {k: v for k, v in m.items() if k != "confusion_matrix"} for name, m in metrics.items()},
        "training": training.model_dump(mode="json"),
        "training_seconds": round(training_seconds, 1),
    }
    metadata = save_model(classifier, folder, metadata)
    if publish and store is not None:
        newest = newest_published(store, config.pair)
        name, previous = newest if newest is not None else ("the newest version", None)
        if refusal := publication_refusal(metadata, training.min_test_macro_f1, previous, name):
            raise GateFailed(
                f"train-domain {config.pair}: not published, {refusal}; {f'{name} stays the newest' if newest else 'none is'} "
                f"published (the model is in {folder}); train on more or cleaner data, or change the minimum in the pair's YAML"
            )
    uri = publish_model(store, config.pair, folder) if publish and store is not None else None
    dvc_get = None
    if uri:
        log.info("train-domain %s: published %s (test macro F1 %.3f)", config.pair, uri, metrics["test"]["macro_f1"])
        if config.release.record_in_registry:  # models are versioned in the registry as releases are
            dvc_get = record_in_registry(config, store, folder, uri).get_command  # type: ignore[arg-type] - uri implies a store
            log.info("train-domain %s: recorded in the DVC registry: %s", config.pair, dvc_get)
    return TrainedModel(folder, metadata, uri, dvc_get)


class TrainDomain(Stage):
    name = "train_domain"
    partitioning = "model"
    resources = Resources(gpu=True)
    help = "train the pair's domain classifier (domain.training) and publish it as models/<pair>/domain/v<N>/"

    @classmethod
    def enabled(cls, config: PairConfig) -> bool:
        return config.domain.training is not None

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--kind",
            choices=get_args(DomainTrainingConfig.model_fields["kind"].annotation),
            help="model kind (default: domain.training.kind)",
        )
        parser.add_argument("--data", help="labelled sentences, JSONL path or s3://bucket/key (default: domain.training.data)")
        parser.add_argument("--out", type=Path, help="model folder to write (default: a temporary folder)")
        parser.add_argument("--no-publish", action="store_true", help="do not upload the model to the object store")

    def run(self, inputs: Sequence[str] = ()) -> dict[str, Any]:
        options = self.options
        config = with_training(self.ctx.config, kind=options.get("kind"), data=options.get("data"))
        trained = train_domain(
            config, self.ctx.store, out_dir=options.get("out"), publish=not options.get("no_publish"), run_id=self.ctx.run_id,
            requested_by=self.ctx.provenance,
        )  # fmt: skip
        return trained.summary()
