"""A release's manual evaluation against the real S3 server: labels are stored beside the release, append-only, and
never inside it; the command line prints the figures the Airflow page shows, exports the labels and fits a
threshold to them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from bitextflow import cli
from bitextflow.catalog.evaluations import add_label, find_release, labels_prefix, prior_evaluation, read_labels, release_sample
from bitextflow.catalog.releases import ReleaseInfo, publish_release, release_prefix
from bitextflow.errors import BitextflowError
from bitextflow.release.build import build_release
from bitextflow.storage import ObjectStore
from tests.unit.test_release import GATE_REPORT, PAIR, counts, extras, pairs


def scored_release(store: ObjectStore, run_id: str) -> ReleaseInfo:
    frame = pairs(60)
    return publish_release(
        store, PAIR, frame.assign(margin_score=[0.6 + i / 200 for i in range(60)]), counts(), run_id, GATE_REPORT
    )


def test_labels_are_appended_beside_the_release_and_read_back(store: ObjectStore) -> None:
    release = scored_release(store, "manual__evaluation_store")
    files = set(store.list_keys(release_prefix(PAIR, release.version)))
    sample = release_sample(store, release, size=10, seed=3)
    first, second = sample.items[0].item, sample.items[1].item
    add_label(store, release, sample, first, "bad", "ann")
    add_label(store, release, sample, first, "good", "ann", "second look")
    add_label(store, release, sample, second, "good", "bob")
    assert len(store.list_keys(labels_prefix(PAIR, release.version))) == 3  # nothing overwritten
    assert set(store.list_keys(release_prefix(PAIR, release.version))) == files  # the release is untouched
    labels = read_labels(store, release)
    assert [(lb.item, lb.label, lb.annotator) for lb in labels] == [
        (first, "bad", "ann"),
        (first, "good", "ann"),
        (second, "good", "bob"),
    ]
    assert labels[1].comment == "second look" and {lb.seed for lb in labels} == {3}
    with pytest.raises(BitextflowError, match="not in the sample"):
        add_label(store, release, sample, "0000000000000000", "good", "ann")
    with pytest.raises(BitextflowError, match="no release v999"):
        find_release(store, PAIR, 999)


def test_the_command_line_prints_the_estimate_exports_the_labels_and_fits_a_threshold(
    store: ObjectStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = scored_release(store, "manual__evaluation_cli")
    sample = release_sample(store, release, size=20, seed=1)
    for item in sample.items:  # every pair under a margin of 0.75 is wrong
        add_label(store, release, sample, item.item, "good" if item.scores["margin_score"] >= 0.75 else "bad", "ann")
    options = ["--pair", PAIR, "--version", str(release.version), "--size", "20"]

    assert cli.main(["-q", "releases", "evaluation", *options]) == 0
    printed = capsys.readouterr().out
    assert f"{PAIR} v{release.version}: sample of 20 (seed 1) from 60 pairs, 20 labelled by ann" in printed
    assert "precision with its 95% interval (stratified)" in printed

    assert cli.main(["-q", "releases", "evaluation", *options, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert (
        figures["overall"]["judged"] == 20
        and figures["overall"]["low"] < figures["overall"]["precision"] < figures["overall"]["high"]
    )

    assert cli.main(["-q", "releases", "evaluation", *options, "--export", "jsonl"]) == 0
    exported = tmp_path / "labels.jsonl"
    exported.write_text(capsys.readouterr().out, encoding="utf-8")
    assert len(exported.read_text(encoding="utf-8").splitlines()) == 20

    assert cli.main(["-q", "releases", "calibrate", *options, "--precision", "0.99", "--labels", str(exported)]) == 0
    fitted = json.loads(capsys.readouterr().out)
    lowest_good = min(i.scores["margin_score"] for i in sample.items if i.scores["margin_score"] >= 0.75)
    assert fitted["threshold"] == pytest.approx(lowest_good) and fitted["set"].startswith("score.margin_threshold=")
    kept = int((pd.Series([0.6 + i / 200 for i in range(60)]) >= fitted["threshold"]).sum())
    assert fitted["kept_pairs"] == kept and fitted["yield_cost"] == round(1 - kept / 60, 4)

    assert cli.main(["-q", "releases", "calibrate", *options, "--precision", "0.99", "--labels", str(tmp_path / "none")]) == 2
    assert "--labels" in capsys.readouterr().err


def test_the_next_release_reports_and_cites_the_labels_of_the_one_before(store: ObjectStore, tmp_path: Path, pair_config) -> None:
    judged = scored_release(store, "manual__evaluation_cited")
    sample = release_sample(store, judged, size=10, seed=1)
    for item in sample.items:
        add_label(store, judged, sample, item.item, "good", "ann")
    evaluation = prior_evaluation(store, PAIR, judged.version + 1)
    assert evaluation is not None and evaluation["version"] == judged.version and evaluation["overall"]["good"] == 10
    assert (
        prior_evaluation(store, PAIR, judged.version + 1, labelled_until="2000-01-01T00:00:00Z") != evaluation
    )  # older labels only

    frame = pairs(8)
    build_release(
        tmp_path,
        PAIR,
        judged.version + 1,
        frame,
        counts(),
        "manual__next",
        GATE_REPORT,
        replace(extras(frame), config=pair_config, evaluation=evaluation),
    )
    stats = json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))
    assert stats["manual_evaluation"]["overall"]["precision"] == 1.0
    assert f"Manual evaluation (v{judged.version})" in (tmp_path / "report.html").read_text(encoding="utf-8")
    datasheet = (tmp_path / "datasheet.md").read_text(encoding="utf-8")
    assert "## Manual evaluation" in datasheet and f"10 sentence pairs of release v{judged.version}" in datasheet
