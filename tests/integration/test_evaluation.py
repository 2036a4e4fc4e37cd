"""A release's manual evaluation against the real S3 server: labels are stored beside the release, append-only, and
never inside it; the command line prints the figures the Airflow page shows, exports the labels and fits a
threshold to them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bitextflow import cli
from bitextflow.catalog.evaluations import add_label, find_release, labels_prefix, read_labels, release_sample
from bitextflow.catalog.releases import ReleaseInfo, publish_release, release_prefix
from bitextflow.errors import BitextflowError
from bitextflow.storage import ObjectStore
from tests.unit.test_release import GATE_REPORT, PAIR, counts, pairs


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
