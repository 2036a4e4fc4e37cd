"""Tests of the Vecalign-style embedding sentence aligner (bitextflow.align.embedding)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from bitextflow.align.embedding import Background, align_sentences_embedding, unit_rows
from bitextflow.align.evaluation import read_links, score_alignments
from tests.support import EVAL_DIR, cpu_clock
from tests.support.alignment_fakes import covers, spread_deletions, word_vector

BLEUALIGN = EVAL_DIR / "bleualign_defr_gold"
#: Files of the gold test (test0 and test1 are left to the benchmark to keep the test under ~90 s).
GOLD_FILES = ("test2", "test3")
#: Strict F1 measured on GOLD_FILES was 0.890 (docs/align.md); the floor leaves a margin for
#: numerical differences between machines and encoder builds.
GOLD_STRICT_F1_FLOOR = 0.85
#: Deletion cost for the fake encoder's geometry (see :class:`BagEncoder`).
FAKE_DELETION_COST = 0.2


class BagEncoder:
    """Deterministic fake encoder: a text is the normalised sum of one random vector per word.

    The same words on both sides are "translations" (the target side is written in upper case, so
    that its strings differ from the source's while its words embed the same), and the concatenation of two sentences embeds
    as their sum, so overlaps behave as they do with a real encoder. A little noise seeded by the
    whole text keeps translations from being exactly identical (a real encoder never is), so a 2-2
    bead never ties with the two 1-1 beads it could be split into.

    Unrelated bags are orthogonal here, where E5 puts any two sentences at cosine ~0.8; relative
    to the normaliser, a sentence merged into a bead costs less here than with E5, so the tests use
    :data:`FAKE_DELETION_COST` instead of the default tuned for E5.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.calls: list[int] = []
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        if word not in self._words:
            self._words[word] = word_vector(word, self.dim)
        return self._words[word]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            out[row] = 0.05 * self._word("\0noise " + text) * max(1, len(text.split())) ** 0.5
            for word in text.split():
                out[row] += self._word(word.lower())
        lengths = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(lengths, 1e-12)


def _sentence(k: int) -> str:
    return f"w{k}a w{k}b w{k}c"


def _target(k: int) -> str:
    return _sentence(k).upper()


def test_one_to_one_two_to_one_and_deletion_recovered() -> None:
    src = [_sentence(k) for k in range(8)]
    src[5] = "unrelated deleted words here"
    # target: 0-2 one to one, 3+4 merged into one sentence, 5 deleted, 6 and 7 one to one
    tgt = [_target(0), _target(1), _target(2), f"{_target(3)} {_target(4)}", _target(6), _target(7)]
    beads = align_sentences_embedding(src, tgt, BagEncoder(), deletion_cost=FAKE_DELETION_COST)
    links = [(bead.src, bead.tgt) for bead in beads]
    assert links == [((0,), (0,)), ((1,), (1,)), ((2,), (2,)), ((3, 4), (3,)), ((5,), ()), ((6,), (4,)), ((7,), (5,))]
    assert covers(beads, len(src), len(tgt))
    for bead in beads:
        assert 0.0 <= bead.score <= 1.0
        if bead.src and bead.tgt:
            assert bead.score > 0.9
        else:
            assert bead.score == 0.0


def test_one_to_two_and_insertion_recovered() -> None:
    src = [_sentence(k) for k in range(6)]
    tgt = [_target(0), "INSERTED TARGET ONLY WORDS", _target(1), "W2A W2B", "W2C", _target(3), _target(4), _target(5)]
    links = [(bead.src, bead.tgt) for bead in align_sentences_embedding(src, tgt, BagEncoder(), deletion_cost=FAKE_DELETION_COST)]
    assert ((), (1,)) in links
    assert ((2,), (3, 4)) in links
    assert ((5,), (7,)) in links


def test_empty_sides() -> None:
    encoder = BagEncoder()
    assert align_sentences_embedding([], [], encoder) == []
    beads = align_sentences_embedding(["a b", "c d"], [], encoder)
    assert [(b.src, b.tgt, b.score) for b in beads] == [((0,), (), 0.0), ((1,), (), 0.0)]
    beads = align_sentences_embedding([], ["a b"], encoder)
    assert [(b.src, b.tgt, b.score) for b in beads] == [((), (0,), 0.0)]
    assert encoder.calls == []  # nothing to encode
    beads = align_sentences_embedding(["a b"], ["a b"], encoder)
    assert [(b.src, b.tgt) for b in beads] == [((0,), (0,))]
    beads = align_sentences_embedding(["", "x"], ["", "x"], encoder)  # sentences without words
    assert covers(beads, 2, 2)


def test_identical_overlaps_encoded_once() -> None:
    encoder = BagEncoder()
    align_sentences_embedding(["same", "same", "same"], ["same", "same"], encoder)
    # distinct strings: "same", "same same", "same same same"
    assert encoder.calls == [3]


def test_ten_thousand_sentences_fast_and_coarse_to_fine() -> None:
    src, tgt, expected = spread_deletions(10_000, _sentence, _target)
    with cpu_clock() as seconds:
        beads = align_sentences_embedding(src, tgt, BagEncoder(dim=32), deletion_cost=FAKE_DELETION_COST)
    assert covers(beads, len(src), len(tgt))
    assert {bead.src[0] for bead in beads if not bead.tgt} == expected
    assert seconds() < 60, f"10,000 x 10,000 took {seconds():.1f} s of CPU"


@pytest.mark.skipif(not BLEUALIGN.is_dir(), reason=f"Bleualign gold data not found at {BLEUALIGN} (../shared/eval is absent)")
def test_bleualign_gold_with_real_encoder() -> None:
    from bitextflow.models.encoder import SentenceEncoder

    encoder = SentenceEncoder.from_path()
    gold, predicted = [], []
    for name in GOLD_FILES:
        src = (BLEUALIGN / f"{name}.de").read_text(encoding="utf-8").splitlines()
        tgt = (BLEUALIGN / f"{name}.fr").read_text(encoding="utf-8").splitlines()
        gold.append(read_links(BLEUALIGN / f"{name}.defr"))
        predicted.append([(b.src, b.tgt) for b in align_sentences_embedding(src, tgt, encoder)])
    scores = score_alignments(gold, predicted)
    assert scores.f1_strict >= GOLD_STRICT_F1_FLOOR, scores


def test_pair_config_selects_vecalign_with_an_encoder(pair_config) -> None:
    from bitextflow.align.aligners import sentence_aligner

    config = pair_config.with_overrides({"align.sentence_aligner": "vecalign"})
    assert config.align.sentence_aligner == "vecalign" and config.align.encoder_model is None
    align = sentence_aligner("vecalign", encoder=BagEncoder())
    beads = align([_sentence(0), _sentence(1)], [_target(0), _target(1)])
    assert [(bead.src, bead.tgt) for bead in beads] == [((0,), (0,)), ((1,), (1,))]
    with pytest.raises(ValueError, match="needs an encoder"):
        sentence_aligner("vecalign")


class SharedDirectionEncoder:
    """Fake encoder with E5's geometry: every sentence shares one direction (unrelated sentences at cosine ~0.35) and a
    translation is its source plus noise (cosine ~0.94). ``"S 3"`` is source sentence 3, ``"T 3"`` its translation;
    an overlap ("S 3 S 4") embeds as the sum of its sentences."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            words = text.split()
            row = np.zeros(64)
            for side, key in zip(words[::2], words[1::2], strict=True):
                row += word_vector("\0shared", 64) + word_vector(key, 64)
                row += 0.45 * word_vector("noise " + key, 64) if side == "T" else 0.0
            rows.append(row)
        return unit_rows(np.array(rows))


def test_a_short_document_scores_its_translations_as_a_long_one_does() -> None:
    """Vecalign's normaliser counts a bead's own translation among the unrelated sentences: in a two-sentence document it
    is half of them, and the scores of right beads dropped from ~0.91 to ~0.86 (0 for a one-sentence document)."""
    encoder = SharedDirectionEncoder()

    def scores(n: int) -> list[float]:
        beads = align_sentences_embedding([f"S {k}" for k in range(n)], [f"T {k}" for k in range(n)], encoder)
        return [bead.score for bead in beads]

    long_document = scores(10)
    assert min(scores(2)) > min(long_document) - 0.02
    assert scores(1) == [0.0]  # nothing unrelated to compare with, and no background


def test_a_one_sentence_document_pair_is_scored_against_the_background() -> None:
    encoder = SharedDirectionEncoder()
    background = Background.of(
        encoder.encode([f"S {k}" for k in range(10, 30)]), encoder.encode([f"T {k}" for k in range(10, 30)])
    )
    (right,) = align_sentences_embedding(["S 1"], ["T 1"], encoder, background=background)
    (wrong,) = align_sentences_embedding(["S 1"], ["T 2"], encoder, background=background)
    assert right.score > 0.85
    assert wrong.score < 0.1
    assert Background.of(np.zeros((0, 64)), encoder.encode(["T 1"])) is None
