"""The margin scorer's calibration procedure (bitextflow.score.margin_calibration) on small synthetic data: the rows it
builds and the variants it compares against the calibration it chooses. The real run (Tatoeba, the installation guide,
Bible verses) is the command's, documented in docs/score.md."""

from __future__ import annotations

import numpy as np
import pytest

from bitextflow.score import margin_calibration, pair_calibrations
from bitextflow.score.margin_calibration import calibrate, compared, examples


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def synthetic_documents(documents: int = 30, length: int = 6) -> tuple[dict, dict[str, np.ndarray]]:
    """Documents of ``length`` pairs whose sides' vectors are a shared random direction plus a little noise: each
    translation is its partner's nearest, as an encoder would make it."""
    rng = np.random.default_rng(0)
    docs, vectors = [], {}
    for number in range(documents):
        doc = []
        for index in range(length):
            english, spanish = f"sentence {index} of document {number} here", f"frase {index} del documento {number}"
            meaning = rng.normal(size=16)
            vectors[english], vectors[spanish] = unit_rows(np.stack([meaning + 0.2 * rng.normal(size=16) for _ in "ab"]))
            doc.append((english, spanish))
        docs.append(doc)
    return {"synthetic": docs}, vectors


def test_every_row_has_its_kind_words_and_margins_with_the_shard_and_the_document_as_pool():
    documents, vectors = synthetic_documents()
    rows = examples(documents, vectors)
    count = len(rows.kind)
    assert len(rows.source) == len(rows.document) == len(rows.pairs) == count
    assert all(len(values) == count for values in [*rows.margins.values(), *rows.document_margins.values()])
    translations = {pair for doc in documents["synthetic"] for pair in doc}
    assert all((pair in translations) == (kind == "translation") for pair, kind in zip(rows.pairs, rows.kind, strict=True))
    assert rows.kind.count("translation") == 30 * 5, "the first round's translations, one pair a document corrupted"
    assert {"neighbour", "shuffled"} <= set(rows.kind)
    # the cosine does not depend on the pool; the margins do
    assert np.allclose(rows.margins[margin_calibration.COSINE], rows.document_margins[margin_calibration.COSINE])
    assert not np.allclose(rows.margins[2], rows.document_margins[2])


def test_a_variant_with_a_feature_the_margin_lacks_shows_a_positive_difference_and_itself_none():
    rng = np.random.default_rng(1)
    documents = 60
    pattern = ["translation", "translation", "translation", "neighbour", "translation", "shuffled"]
    kinds = np.tile(pattern, 200)  # 20 rows a document
    labels = (kinds == "translation").astype(int)
    groups = np.repeat(np.arange(documents), 20)
    margin = labels + rng.normal(scale=1.0, size=len(labels))  # overlapping classes
    extra = labels + rng.normal(scale=0.5, size=len(labels))  # a second, independent signal
    chosen = margin_calibration.out_of_fold(margin, labels, groups)
    threshold = margin_calibration.youden_threshold(chosen, labels)

    same = compared(chosen, chosen, threshold, kinds, groups)
    assert same["threshold"] == threshold and same["j_difference_5_50_95"] == [0.0, 0.0, 0.0]
    better = compared(
        margin_calibration.out_of_fold(np.column_stack([margin, extra]), labels, groups), chosen, threshold, kinds, groups
    )
    assert better["j_difference_5_50_95"][0] > 0 and better["youden_j"] > same["youden_j"]


def test_calibrate_reports_the_variants_beside_the_chosen_calibration():
    documents, vectors = synthetic_documents()
    result = calibrate(examples(documents, vectors))
    assert result["calibration"]["neighbours"] in margin_calibration.NEIGHBOUR_CHOICES
    assert set(result["variants"]) == {"document_pool", "margin_and_cosine", "margin_cosine_and_length"}
    for figures in result["variants"].values():
        low, middle, high = figures["j_difference_5_50_95"]
        assert low <= middle <= high and 0 < figures["threshold"] < 1


def test_a_pairs_saved_calibration_is_its_own(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BITEXTFLOW_CACHE", str(tmp_path))
    result = {"calibration": {"neighbours": 2, "slope": 140.0, "intercept": -137.0}, "threshold": 0.7, "sources": {}}
    path = pair_calibrations.save("en-ja", "onnx-int8", result)
    assert path == tmp_path / "calibrations" / f"margin-en-ja-onnx-int8-v{pair_calibrations.CALIBRATION_VERSION}.json"
    assert pair_calibrations.cached_calibrations("en-ja") == {
        "onnx-int8": pair_calibrations.MarginCalibration(2, 140.0, -137.0, 0.7, pair="en-ja")
    }
    assert pair_calibrations.cached_calibrations("en-zh") == {}


def test_a_pair_with_too_little_parallel_text_is_not_calibrated() -> None:
    """Debian's installation guide (the package `make models` fetches for the offline domain set) has no Arabic, and
    no Bible here is Arabic."""
    with pytest.raises(margin_calibration.NoCalibrationData, match="too little en-ar parallel text"):
        margin_calibration.calibration_documents("en", "ar")
