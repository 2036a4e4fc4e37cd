"""The manual evaluation of published releases, stored next to them: ``evaluations/<pair>/v<N>/labels/``.

A release's own folder (``releases/<pair>/v<N>/``) is immutable once its manifest is written, so labels live beside
it, one object per label: ``<UTC time>-<random id>.json``, a key no other label can take. Nothing is ever
overwritten or deleted; a person who changes their mind adds a label, and the latest one of each person counts
(:func:`bitextflow.release.evaluation.consensus`). Several people, and the Airflow page and the command line, can
therefore label at once without a lock.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bitextflow.catalog.releases import ReleaseInfo, list_releases, read_release_records
from bitextflow.errors import BitextflowError
from bitextflow.release.evaluation import Evaluation, Label, LabelValue, estimate
from bitextflow.release.evaluation_sample import Sample, draw_sample
from bitextflow.storage import ObjectStore

EVALUATIONS_PREFIX = "evaluations"
LABEL_COLUMNS = ("item", "label", "annotator", "at", "seed", "size", "comment")


def labels_prefix(pair: str, version: int) -> str:
    return f"{EVALUATIONS_PREFIX}/{pair}/v{version}/labels/"


def find_release(store: ObjectStore, pair: str, version: int | None) -> ReleaseInfo:
    """Release ``version`` of ``pair`` (the latest when None), or an error that says which versions there are."""
    releases = {info.version: info for info in list_releases(store, pair)}
    if not releases:
        raise BitextflowError(f"{pair} has no release yet; run its DAG (or `bitextflow run --pair {pair}`) first")
    chosen = max(releases) if version is None else version
    if chosen not in releases:
        raise BitextflowError(f"{pair} has no release v{chosen}; it has v{', v'.join(map(str, sorted(releases)))}")
    return releases[chosen]


def release_sample(store: ObjectStore, release: ReleaseInfo, size: int, seed: int) -> Sample:
    """The sample of ``size`` pairs that ``seed`` draws from the release (the same every time)."""
    return draw_sample(read_release_records(store, release), size=size, seed=seed)


def add_label(
    store: ObjectStore, release: ReleaseInfo, sample: Sample, item: str, value: LabelValue, annotator: str, comment: str = ""
) -> Label:
    """Store one label of an item of ``sample`` (as a new object; see the module docstring)."""
    if sample.item(item) is None:
        raise BitextflowError(f"pair {item!r} is not in the sample of seed {sample.seed} and size {sample.size}")
    now = datetime.now(UTC)
    label = Label(
        item=item, label=value, annotator=annotator, at=now.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        seed=sample.seed, size=sample.size, comment=comment.strip(),
    )  # fmt: skip
    key = f"{labels_prefix(release.pair, release.version)}{now.strftime('%Y%m%dT%H%M%S%fZ')}-{uuid.uuid4().hex}.json"
    store.put_bytes(key, json.dumps(label.to_dict(), ensure_ascii=False).encode("utf-8"), "application/json")
    return label


def read_labels(store: ObjectStore, release: ReleaseInfo) -> list[Label]:
    """Every label given to any sample of the release, oldest first."""
    keys = sorted(store.list_keys(labels_prefix(release.pair, release.version)))
    return sorted((Label.from_dict(store.get_json(key)) for key in keys if key.endswith(".json")), key=lambda lb: lb.at)


def release_evaluation(store: ObjectStore, release: ReleaseInfo, size: int, seed: int) -> tuple[Sample, list[Label], Evaluation]:
    """The sample, its stored labels, and what they measure."""
    sample = release_sample(store, release, size, seed)
    labels = read_labels(store, release)
    return sample, labels, estimate(sample, labels, release.pair, release.version)


def labels_tsv(labels: Sequence[Label]) -> str:
    """The labels as TSV with a header row (:data:`LABEL_COLUMNS`); tabs and line breaks in comments become spaces."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar=None)
    writer.writerow(LABEL_COLUMNS)
    for label in labels:
        row = label.to_dict()
        writer.writerow([" ".join(str(row[c]).split()) if c == "comment" else row[c] for c in LABEL_COLUMNS])
    return out.getvalue()


def labels_jsonl(labels: Sequence[Label]) -> str:
    return "".join(json.dumps(label.to_dict(), ensure_ascii=False) + "\n" for label in labels)


def parse_labels(text: str) -> list[Label]:
    """Labels from a JSONL or TSV export (the header row tells TSV)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and lines[0].split("\t")[0] == LABEL_COLUMNS[0]:
        return [Label.from_dict(row) for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)]
    try:
        return [Label.from_dict(json.loads(line)) for line in lines]
    except json.JSONDecodeError as exc:
        raise BitextflowError(f"labels are JSON Lines or TSV with a header row ({', '.join(LABEL_COLUMNS)}): {exc}") from exc


def prior_evaluation(store: ObjectStore, pair: str, version: int, labelled_until: str | None = None) -> dict[str, Any] | None:
    """What the labels of the newest earlier release that has any measure (the sample most of them belong to), as
    :meth:`Evaluation.to_dict` gives it with the labels' time span; None when no earlier release is labelled.

    ``labelled_until`` (a UTC time as manifests write it) leaves out labels given later, so that rebuilding a release
    cites what it cited when it was published."""
    for release in sorted((r for r in list_releases(store, pair) if r.version < version), key=lambda r: -r.version):
        labels = [lb for lb in read_labels(store, release) if labelled_until is None or lb.at[:19] <= labelled_until[:19]]
        if not labels:
            continue
        (seed, size), _ = Counter((lb.seed, lb.size) for lb in labels).most_common(1)[0]
        sample = release_sample(store, release, size, seed)
        if not any(lb.label != "unsure" and lb.seed == seed and lb.size == size for lb in labels):
            continue
        evaluation = estimate(sample, labels, pair, release.version).to_dict()
        return {**evaluation, "labelled_from": labels[0].at, "labelled_until": labels[-1].at}
    return None
