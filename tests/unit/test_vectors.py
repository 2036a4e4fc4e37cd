"""Sentence vectors stored once per run: the stored form, the text identity, the lookup that stands for an encoder."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bitextflow.models.vectors import VectorTable, bead_vector, embeddings_frame, pack, pair_vectors, text_hash, unpack


def unit_rows(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_float16_rows_come_back_within_a_cosine_of_0_99999():
    vectors = unit_rows(50, 384)
    blobs = pack(vectors)
    assert {len(blob) for blob in blobs} == {768}, "384 float16 values a sentence"
    back = unpack(blobs)
    assert back.dtype == np.float32 and back.shape == vectors.shape
    cosines = np.einsum("ij,ij->i", back, vectors) / np.linalg.norm(back, axis=1)
    assert (cosines > 0.99999).all()
    assert unpack([]).shape == (0, 0)


def test_a_texts_identity_ignores_the_spaces_around_it_and_nothing_else():
    assert text_hash("  Hola.\n") == text_hash("Hola.") != text_hash("Hola")
    assert len(text_hash("x")) == 8
    assert text_hash("\ud800 lone surrogate") != text_hash("")  # texts from broken pages still hash


def test_the_table_serves_stored_rows_in_the_order_asked():
    texts = ["One.", "Two.", "Three."]
    frame = embeddings_frame(texts, unit_rows(3))
    assert list(frame["text_hash"]) == sorted(frame["text_hash"]), "rows by hash: the same texts give the same bytes"
    table = VectorTable.from_frame(frame)
    assert len(table) == 3
    np.testing.assert_allclose(table.encode(["Three.", " One."]), unpack(pack(unit_rows(3)[[2, 0]])))
    with pytest.raises(KeyError, match="1 of 2 texts have no stored vector"):
        table.encode(["One.", "Four."])


def test_a_missing_text_is_embedded_by_the_fallback_made_on_first_need_and_counted():
    made = []

    class Encoder:
        def encode(self, texts):
            return np.full((len(texts), 16), 0.25, dtype=np.float32)

    def fallback():
        made.append(1)
        return Encoder()

    table = VectorTable.from_frame(embeddings_frame(["One."], unit_rows(1)), fallback)
    table.encode(["One."])
    assert made == [] and table.misses == 0, "no encoder while the table has every text"
    rows = table.encode(["Four.", "One.", "Five."])
    assert made == [1] and table.misses == 2
    assert np.allclose(rows[[0, 2]], 0.25) and np.allclose(rows[1], unpack(pack(unit_rows(1)))[0])


def test_a_side_of_several_sentences_is_the_normalised_mean_of_theirs():
    two = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    np.testing.assert_allclose(bead_vector(two), [2**-0.5, 2**-0.5], rtol=1e-6)
    np.testing.assert_allclose(bead_vector(two[:1]), [1.0, 0.0])


def test_pairs_give_their_sides_vectors_only_when_every_pair_has_both():
    a, b = pack(unit_rows(2, seed=1)), pack(unit_rows(2, seed=2))
    pairs = pd.DataFrame({"vector_a": a, "vector_b": b})
    got = pair_vectors(pairs)
    assert got is not None and got[0].shape == (2, 16)
    assert pair_vectors(pairs.assign(vector_b=[b[0], None])) is None
    assert pair_vectors(pd.DataFrame({"text_a": ["x"]})) is None
