"""The margin pair scorer (Artetxe and Schwenk 2019's ratio margin over multilingual-e5-small embeddings) and the score
stage with it: every pair gets ``margin_score``, pairs under ``score.margin_threshold`` are set aside and counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bitextflow import records
from bitextflow.config import load_pair_config
from bitextflow.models.encoder import shared_encoder
from bitextflow.score import margin
from bitextflow.score.margin import MarginCalibration, MarginScorer, ratio_margins
from bitextflow.stages.registry import run_context, run_stage
from bitextflow.stages.score import Score
from bitextflow.storage.tables import read_table, write_table
from bitextflow.text.comparison import pair_hash
from tests.support import ROOT
from tests.support.texts import DOCUMENTATION

# Documentation sentences in page order, as one document pair of a shard gives them (none of them in the calibration data).
DOCUMENT = DOCUMENTATION[:8]
UNRELATED = "El tiempo de mañana será soleado en toda la costa."


@pytest.fixture(scope="module")
def scorer() -> MarginScorer:
    return MarginScorer(shared_encoder)


def test_ratio_margin_is_the_cosine_over_the_mean_of_both_sides_nearest_neighbours(monkeypatch):
    rng = np.random.default_rng(0)
    vectors_a, vectors_b = (rng.normal(size=(n, 8)) for n in (5, 7))
    vectors_a /= np.linalg.norm(vectors_a, axis=1, keepdims=True)
    vectors_b /= np.linalg.norm(vectors_b, axis=1, keepdims=True)
    rows_a, rows_b = np.array([0, 1, 4]), np.array([2, 2, 6])
    cosines = vectors_a @ vectors_b.T
    near_a = np.sort(cosines, axis=1)[:, -3:].mean(axis=1)  # k = 3: each a's 3 nearest b
    near_b = np.sort(cosines.T, axis=1)[:, -3:].mean(axis=1)
    expected = cosines[rows_a, rows_b] / ((near_a[rows_a] + near_b[rows_b]) / 2)
    assert np.allclose(ratio_margins(vectors_a, vectors_b, rows_a, rows_b, 3), expected)
    monkeypatch.setattr(margin, "CHUNK_CELLS", 8)  # a row or two at a time: the same margins
    assert np.allclose(ratio_margins(vectors_a, vectors_b, rows_a, rows_b, 3), expected)
    # a pool smaller than k: all of it; one pair alone is its own neighbourhood (margin 1)
    assert np.allclose(ratio_margins(vectors_a[:1], vectors_b[:1], np.array([0]), np.array([0]), 4), [1.0])


def test_calibration_is_platt_scaling_of_the_margin():
    calibration = MarginCalibration(neighbours=2, slope=10.0, intercept=-10.0, threshold=0.5)
    assert np.allclose(calibration.probability(np.array([1.0, 0.0])), [0.5, 1 / (1 + np.exp(10.0))])


def test_scorer_keeps_translations_and_drops_neighbours_and_shuffled_partners(scorer):
    """A shard as an aligner leaves it: the document's translations, three of its sentences paired with the next
    sentence's translation (a shifted alignment), two with an unrelated sentence."""
    english = [a for a, _ in DOCUMENT]
    spanish = [b for _, b in DOCUMENT]
    neighbours = [(english[i], spanish[i + 1]) for i in (0, 3, 5)]
    shuffled = [(english[2], UNRELATED), (english[6], spanish[1])]
    pairs = DOCUMENT + neighbours + shuffled
    scores, calibration = scorer.scores([a for a, _ in pairs], [b for _, b in pairs])
    print(np.round(scores, 3))
    assert calibration == margin.E5_SMALL_CALIBRATIONS[shared_encoder().runtime], "the runtime's own calibration"
    assert ((scores >= 0) & (scores <= 1)).all()
    assert (scores[: len(DOCUMENT)] >= calibration.threshold).all()
    assert (scores[len(DOCUMENT) :] < calibration.threshold).all()
    assert scorer.scores([], [])[0].shape == (0,)


def shard(pairs: list[tuple[str, str]]) -> pd.DataFrame:
    frame = records.frame_of(
        (records.SentencePair("http://site/en/a.html", "http://site/es/a.html", "en", "es", a, b, 0.9, pair_hash=pair_hash(a, b))
         for a, b in pairs),
        records.SENTENCE_PAIRS,
    )  # fmt: skip
    return frame.drop(columns=["margin_score"])  # as the aligner writes it: the column is the scorer's


def test_stage_writes_the_margin_score_of_every_pair_and_drops_those_below_the_threshold(s3_env, store):
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides({"score.pair_scorer": "margin"})
    ctx = run_context(config, store, "manual__margin")
    wrong = [(DOCUMENT[0][0], DOCUMENT[1][1]), (DOCUMENT[4][0], UNRELATED)]
    identical = ("apt-get install foo bar", "apt-get install foo bar")  # our hard rule drops it first
    key = write_table(
        store, ctx.key("align_sentences", "shard-0.parquet"), shard(DOCUMENT + wrong + [identical]), records.SENTENCE_PAIRS
    )

    kept = read_table(store, run_stage(ctx, Score, [key])[0])
    rejected = read_table(store, ctx.key("score", "shard-0.rejected.parquet"))
    assert sorted(zip(kept["text_a"], kept["text_b"], strict=True)) == sorted(DOCUMENT)
    assert (kept["margin_score"] >= margin.E5_SMALL_CALIBRATIONS[shared_encoder().runtime].threshold).all()
    assert list(rejected["rule_tags"]) == ["margin_below_threshold", "margin_below_threshold", "identical_sides"]
    assert rejected["margin_score"].notna().all()  # every pair is scored, the hard rules' rejects too
    counts = store.get_json(ctx.key("score", "shard-0.counts.json"))
    assert counts == {"stage": "score", "in": 11, "kept": 8, "dropped": {"identical_sides": 1, "margin_below_threshold": 2}}

    # The DAG's score_rules task (bicleaner on) calls no setup(): the scorer loads on first use, in prepare.
    stage = Score(ctx)
    job = stage.prepare(key)
    assert read_table(store, job["rules_key"])["margin_score"].notna().all()
    # Without the scorer the column is there, empty.
    plain = run_context(config.with_overrides({"score.pair_scorer": "none"}), store, "manual__no-margin")
    plain_key = write_table(store, plain.key("align_sentences", "shard-0.parquet"), shard(DOCUMENT), records.SENTENCE_PAIRS)
    assert read_table(store, run_stage(plain, Score, [plain_key])[0])["margin_score"].isna().all()


def test_calibration_command_names_the_tatoeba_files_it_needs(tmp_path: Path, capsys) -> None:
    from bitextflow.score import margin_calibration

    assert margin_calibration.main(["--tatoeba", str(tmp_path)]) == 2
    assert f"{tmp_path / 'tatoeba.spa-eng.eng'} is missing; pass --tatoeba" in capsys.readouterr().err


def test_a_pair_without_a_calibration_of_its_own_is_scored_with_en_es_and_says_so(s3_env, store, caplog) -> None:
    """en-ar: Debian's installation guide has no Arabic, so `prepare` never fits one (the sides here are Spanish: the
    warning is about the pair)."""
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {"target": "ar", "domain.terms": {}, "score.pair_scorer": "margin"}
    )
    ctx = run_context(config, store, "manual__uncalibrated")
    key = write_table(store, ctx.key("align_sentences", "shard-0.parquet"), shard(DOCUMENT), records.SENTENCE_PAIRS)
    with caplog.at_level("WARNING", logger="bitextflow.stages.score"):
        run_stage(ctx, Score, [key])
    assert "en-ar: the margin scorer has no calibration of this pair, so it scores with en-es's" in caplog.text
