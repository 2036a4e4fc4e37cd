"""The manual evaluation's statistics (bitextflow.release.evaluation) against values worked out by hand or published:
Wilson's interval, the stratified estimator, the sample's reproducibility and allocation, several labellers, and the
threshold the labels imply."""

from __future__ import annotations

import pandas as pd
import pytest

from bitextflow.catalog.evaluations import labels_jsonl, labels_tsv, parse_labels
from bitextflow.errors import BitextflowError
from bitextflow.release.evaluation import Label, estimate, fit_threshold, stratified_interval, wilson_interval
from bitextflow.release.evaluation_sample import draw_sample


def release(n: int = 400, hosts: int = 2) -> pd.DataFrame:
    """``n`` pairs on ``hosts`` sites, margin scores spread evenly over [0.5, 1)."""
    return pd.DataFrame(
        {
            "url_a": [f"https://site{i % hosts}.example/en/{i}" for i in range(n)],
            "url_b": [f"https://site{i % hosts}.example/es/{i}" for i in range(n)],
            "text_a": [f"Sentence {i}." for i in range(n)],
            "text_b": [f"Frase {i}." for i in range(n)],
            "alignment_score": 0.5,
            "margin_score": [0.5 + 0.5 * i / n for i in range(n)],
        }
    )


def label(item: str, value: str, who: str = "ann", at: int = 0, seed: int = 1, size: int = 40) -> Label:
    return Label(item=item, label=value, annotator=who, at=f"2026-12-02T10:00:{at:09.6f}Z", seed=seed, size=size)  # type: ignore[arg-type]


def test_wilson_interval_of_180_good_in_200() -> None:
    low, high = wilson_interval(180, 200)
    assert (round(low, 3), round(high, 3)) == (0.851, 0.934)


def test_wilson_interval_at_the_edges_stays_inside_zero_one() -> None:
    low, high = wilson_interval(20, 20)
    assert high == 1.0 and 0.83 < low < 0.84  # the published value for 20 of 20: 0.839
    with pytest.raises(BitextflowError, match="at least one pair"):
        wilson_interval(0, 0)


def test_one_stratum_is_exactly_wilson() -> None:
    precision, low, high = stratified_interval([(5000, 180, 200)])
    assert precision == 0.9 and (low, high) == pytest.approx(wilson_interval(180, 200))


def test_stratified_estimate_weights_strata_by_their_pairs() -> None:
    # 100 pairs at 0.95 (57 of 60) and 900 at 0.5 (20 of 40): 0.1 * 0.95 + 0.9 * 0.5
    precision, low, high = stratified_interval([(100, 57, 60), (900, 20, 40)])
    assert precision == pytest.approx(0.545)
    variance = 0.01 * 0.95 * 0.05 / 60 + 0.81 * 0.5 * 0.5 / 40
    effective = 0.545 * 0.455 / variance
    assert effective < 50  # 100 judged, but most of them where few pairs are: worth fewer
    assert (low, high) == pytest.approx(wilson_interval(0.545 * effective, effective))


def test_a_stratified_sample_is_never_worth_more_than_its_size() -> None:
    # proportional allocation: Kish's effective size would exceed 100; Korn and Graubard cap it at the sample's size
    assert stratified_interval([(900, 57, 60), (100, 20, 40)])[1:] == pytest.approx(wilson_interval(0.905 * 100, 100))


def test_strata_nobody_judged_are_left_out() -> None:
    assert stratified_interval([(900, 57, 60), (100, 0, 0)])[0] == pytest.approx(0.95)
    with pytest.raises(BitextflowError, match="no pair"):
        stratified_interval([(10, 0, 0)])


def test_the_sample_is_the_same_whatever_order_the_release_lists_its_pairs() -> None:
    pairs = release()
    first = draw_sample(pairs, size=40, seed=7)
    shuffled = draw_sample(pairs.sample(frac=1, random_state=3), size=40, seed=7)
    assert [i.item for i in first.items] == [i.item for i in shuffled.items]
    assert [i.item for i in draw_sample(pairs, size=40, seed=8).items] != [i.item for i in first.items]


def test_the_sample_is_allocated_to_bands_and_sites_in_proportion() -> None:
    sample = draw_sample(release(400, hosts=2), size=40, seed=1)
    assert len(sample.items) == 40 and len({i.item for i in sample.items}) == 40
    assert len(sample.strata) == 8  # four score bands of two sites
    per_stratum = pd.Series([(i.band, i.site) for i in sample.items]).value_counts()
    assert set(per_stratum) == {5}


def test_every_stratum_gets_a_pair_where_the_size_allows() -> None:
    pairs = pd.concat(
        [release(400, hosts=1), release(4, hosts=1).assign(url_a=lambda f: "https://tiny.example/" + f.index.astype(str))]
    )
    sample = draw_sample(pairs, size=20, seed=1)
    assert any(i.site == "tiny.example" for i in sample.items)
    assert len(sample.items) == 20


def test_a_sample_larger_than_the_release_takes_every_pair() -> None:
    assert len(draw_sample(release(12), size=200).items) == 12


def test_bad_sizes_and_empty_releases_are_refused() -> None:
    with pytest.raises(BitextflowError, match="at least one pair"):
        draw_sample(release(), size=0)
    with pytest.raises(BitextflowError, match="no sentence pairs"):
        draw_sample(release().iloc[:0])
    with pytest.raises(BitextflowError, match="not one of"):
        label("x", "great")


def test_latest_label_of_each_person_counts_and_a_tie_is_unsure() -> None:
    sample = draw_sample(release(), size=40)
    a, b, c = (i.item for i in sample.items[:3])
    labels = [
        label(a, "bad", "ann", 0), label(a, "good", "ann", 1),  # ann changed her mind
        label(a, "good", "bob", 2),
        label(b, "good", "ann", 3), label(b, "bad", "bob", 4),  # a tie
        label(c, "bad", "ann", 5),
        label(c, "good", "ann", 6, seed=2),  # another sample's label does not count here
    ]  # fmt: skip
    evaluation = estimate(sample, labels, "en-es", 1)
    assert (evaluation.overall.good, evaluation.overall.bad, evaluation.overall.unsure) == (1, 1, 1)
    assert evaluation.agreement == 0.5 and evaluation.shared_items == 2
    assert evaluation.annotators == ["ann", "bob"]


def test_precision_per_band_and_the_threshold_the_labels_imply() -> None:
    sample = draw_sample(release(), size=40)
    # every pair under a margin of 0.75 is wrong, every other right
    labels = [label(i.item, "good" if i.scores["margin_score"] >= 0.75 else "bad", at=n) for n, i in enumerate(sample.items)]
    evaluation = estimate(sample, labels, "en-es", 1)
    assert evaluation.overall.precision == pytest.approx(0.5)
    assert evaluation.method == "stratified"
    assert [round(v.precision, 2) for v in evaluation.per_band.values()] == [0.0, 0.0, 1.0, 1.0]
    assert all(v.precision == pytest.approx(0.5) for v in evaluation.per_site.values())
    kept = [point.kept_pairs for point in evaluation.curve]
    assert kept == sorted(kept, reverse=True) and kept[0] == 400
    point = fit_threshold(evaluation, 0.99)
    lowest_good = min(i.scores["margin_score"] for i in sample.items if i.scores["margin_score"] >= 0.75)
    assert point.estimate.precision == 1.0 and point.threshold == pytest.approx(lowest_good)
    assert point.kept_pairs == sum(score >= point.threshold for score in release()["margin_score"])
    with pytest.raises(BitextflowError, match="no threshold"):
        fit_threshold(estimate(sample, [label(i.item, "bad", at=n) for n, i in enumerate(sample.items)], "en-es", 1), 0.9)


def test_labels_survive_an_export_in_either_format() -> None:
    labels = [label("a1", "good"), Label("b2", "unsure", "ann\u00e9e", "2026-12-02T10:00:01Z", 1, 40, "a\ttab and\na line")]
    assert parse_labels(labels_jsonl(labels)) == labels
    back = parse_labels(labels_tsv(labels))
    assert back[0] == labels[0] and back[1].comment == "a tab and a line"
    with pytest.raises(BitextflowError, match="JSON Lines or TSV"):
        parse_labels("not a label")
