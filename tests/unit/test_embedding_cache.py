"""The machine's embedding cache: vectors by text hash per encoder identity, bounded in size, shared by processes, and
never the reason a task fails."""

from __future__ import annotations

import logging
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from bitextflow.models.embedding_cache import EmbeddingCache, encode_through_cache
from bitextflow.models.encoder import SentenceEncoder
from bitextflow.models.vectors import pack, text_hash, unpack

DIM = 8


class CountingEncoder:
    """An encoder whose vectors follow from the text, counting what it was asked to encode."""

    dim = DIM

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts):
        self.encoded += texts
        rows = np.array([np.random.default_rng(sum(map(ord, text))).normal(size=DIM) for text in texts], dtype=np.float32)
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).reshape(len(texts), DIM)


def test_a_second_encoding_of_the_same_texts_takes_every_vector_from_the_cache(tmp_path: Path) -> None:
    cache, encoder = EmbeddingCache(tmp_path, "encoder", 10**9), CountingEncoder()
    first, cached = encode_through_cache(encoder, ["one", "two", "three"], cache)
    assert cached == 0 and encoder.encoded == ["one", "two", "three"]

    again, cached = encode_through_cache(encoder, ["three", "four", "one"], cache)
    assert cached == 2 and encoder.encoded[3:] == ["four"], "only the text the cache lacks is encoded"
    assert pack(again[[0, 2]]) == pack(first[[2, 0]]), "a cached vector stores as the bytes first stored"
    assert np.allclose(again, encoder.encode(["three", "four", "one"]), atol=1e-3)

    _, cached = encode_through_cache(encoder, ["one"], None)
    assert cached == 0 and encoder.encoded[-1] == "one", "without a cache everything is encoded"


def test_a_text_keeps_its_first_vector(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "encoder", 10**9)
    digest = text_hash("text")
    cache.put([digest], pack(np.ones((1, DIM))))
    cache.put([digest], pack(np.zeros((1, DIM))))
    assert unpack([cache.get([digest])[digest]]).tolist() == [[1.0] * DIM]


def test_past_its_size_the_oldest_vectors_go_first(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "encoder", 200_000)
    batches = [[text_hash(f"{batch}-{k}") for k in range(200)] for batch in range(20)]
    for hashes in batches:
        cache.put(hashes, pack(np.ones((len(hashes), 384))))
    assert cache.path.stat().st_size < 2 * 200_000 + 100_000, "the file stays near its bound"
    assert len(cache.get(batches[-1])) == 200, "the newest vectors stay"
    assert not cache.get(batches[0]), "the oldest went first"


def test_a_damaged_cache_is_a_warning_and_everything_is_encoded(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache, encoder = EmbeddingCache(tmp_path, "encoder", 10**9), CountingEncoder()
    cache.path.write_bytes(b"not a database" * 100)
    with caplog.at_level(logging.WARNING):
        vectors, cached = encode_through_cache(encoder, ["one", "two"], cache)
    assert cached == 0 and vectors.shape == (2, DIM) and encoder.encoded == ["one", "two"]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(cache.path) in warning and "delete the file" in warning and "embed.cache: false" in warning


def _put_many(folder: str, worker: int) -> None:
    cache = EmbeddingCache(Path(folder), "encoder", 10**9)
    for batch in range(10):
        hashes = [text_hash(f"{worker}-{batch}-{k}") for k in range(100)]
        cache.put(hashes, pack(np.full((100, DIM), worker)))
    assert cache.usable


def test_processes_write_at_once_and_lose_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_put_many, args=(str(tmp_path), worker)) for worker in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    assert [process.exitcode for process in workers] == [0, 0, 0]
    every = [text_hash(f"{w}-{b}-{k}") for w in range(3) for b in range(10) for k in range(100)]
    assert len(EmbeddingCache(tmp_path, "encoder", 10**9).get(every)) == 3000


def test_the_identity_names_the_weights_runtime_precision_and_prefix(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"weights")

    def identity(runtime: str = "onnx-int8", prefix: str = "query: ") -> str:
        return SentenceEncoder(None, None, torch.device("cpu"), tmp_path, DIM, runtime).identity(prefix)  # type: ignore[arg-type]

    first = identity()
    assert first.startswith(f"{tmp_path.name}-int8-") and first == identity()
    assert len({first, identity(runtime="torch"), identity(prefix="")}) == 3
    stamp = (tmp_path / "model.safetensors").stat().st_mtime_ns
    os.utime(tmp_path / "model.safetensors", ns=(stamp + 10**9, stamp + 10**9))
    assert identity() != first, "new weights, new vectors"
