"""A reproducible sample of a release's sentence pairs for people to judge (:mod:`bitextflow.release.evaluation`
measures what their labels say).

The sample (:func:`draw_sample`) is stratified by score band (the quartiles of the release's margin score, or of
its alignment score when no margin scorer ran) and by site (the host of the first side's URL): each stratum gets
a share of the sample proportional to its pairs (largest remainders, at least one pair where the size allows), and
the pairs inside it are drawn with a NumPy generator seeded by ``seed``, after ordering them by a digest of the
pair, so the same release, size and seed give the same sample whatever order its file lists the pairs in.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from bitextflow.errors import BitextflowError

DEFAULT_SAMPLE_SIZE = 200
DEFAULT_SEED = 1
SCORE_BANDS = 4
#: the score a sample is stratified and a threshold is fitted on, in order of preference
BAND_SCORES = ("margin_score", "alignment_score")
_SHOWN_COLUMNS = ("url_a", "url_b", "text_a", "text_b")
_SCORE_COLUMNS = ("margin_score", "alignment_score", "bicleaner_score", "domain_relevance")


@dataclass(frozen=True)
class SampleItem:
    """One sentence pair of a sample, with what a labeller sees and the stratum it was drawn from."""

    item: str
    position: int
    band: int
    site: str
    url_a: str
    url_b: str
    text_a: str
    text_b: str
    scores: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Stratum:
    """A score band of one site: its pairs in the release, and (for the curve) each pair's score."""

    band: int
    site: str
    pairs: int
    scores: tuple[float, ...]


@dataclass(frozen=True)
class Sample:
    """A drawn sample: its items in labelling order and the strata of the release it represents."""

    seed: int
    size: int
    score_column: str
    band_edges: tuple[float, ...]
    items: tuple[SampleItem, ...]
    strata: tuple[Stratum, ...]

    def item(self, item_id: str) -> SampleItem | None:
        return next((item for item in self.items if item.item == item_id), None)


def pair_item_id(row: Mapping[str, Any]) -> str:
    """A pair's stable id in a sample: a digest of its URLs and texts (the same in every file format of a release)."""
    text = "\x1f".join(str(row[c]) for c in _SHOWN_COLUMNS)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def site_of(url: str) -> str:
    return urlsplit(url).hostname or "(no host)"


def band_score(records: pd.DataFrame) -> str:
    """The column a sample is stratified on: the margin score when every pair has one, else the alignment score."""
    for column in BAND_SCORES:
        if column in records.columns and records[column].notna().all():
            return column
    raise BitextflowError(f"the release has no complete score column to stratify on ({' or '.join(BAND_SCORES)})")


def draw_sample(records: pd.DataFrame, size: int = DEFAULT_SAMPLE_SIZE, seed: int = DEFAULT_SEED) -> Sample:
    """A stratified sample of ``size`` pairs of a release's ``records`` (module docstring), in a shuffled order."""
    if size < 1:
        raise BitextflowError(f"a sample needs at least one pair, not {size}")
    if records.empty:
        raise BitextflowError("the release holds no sentence pairs to sample")
    column = band_score(records)
    frame = records.reset_index(drop=True).copy()
    frame["_item"] = [pair_item_id(row) for row in frame[list(_SHOWN_COLUMNS)].to_dict("records")]
    frame = frame.sort_values("_item", kind="stable").reset_index(drop=True)
    scores = frame[column].astype(float)
    edges = tuple(float(q) for q in np.unique(np.quantile(scores, np.linspace(0, 1, SCORE_BANDS + 1)[1:-1])))
    frame["_band"] = np.searchsorted(np.asarray(edges), scores.to_numpy(), side="right")
    frame["_site"] = frame["url_a"].map(site_of)
    groups = {key: group for key, group in frame.groupby(["_band", "_site"], sort=True)}
    allocation = _allocate({key: len(group) for key, group in groups.items()}, min(size, len(frame)))
    rng = np.random.default_rng(seed)
    drawn = []
    for key, group in groups.items():
        chosen = rng.choice(len(group), size=allocation[key], replace=False) if allocation[key] else []
        drawn.extend(group.iloc[sorted(chosen)].to_dict("records"))
    order = rng.permutation(len(drawn))
    items = tuple(_item(drawn[index], position, column) for position, index in enumerate(order))
    strata = tuple(
        Stratum(band=int(band), site=str(site), pairs=len(group), scores=tuple(group[column].astype(float)))
        for (band, site), group in groups.items()
    )
    return Sample(seed=seed, size=size, score_column=column, band_edges=edges, items=items, strata=strata)


def _allocate(sizes: Mapping[Any, int], total: int) -> dict[Any, int]:
    """Proportional allocation by largest remainders, at least one per stratum while ``total`` allows."""
    population = sum(sizes.values())
    exact = {key: total * n / population for key, n in sizes.items()}
    counts = {key: min(n, math.floor(exact[key])) for key, n in sizes.items()}
    if total >= len(sizes):
        counts = {key: max(c, 1) for key, c in counts.items()}
    by_remainder = sorted(sizes, key=lambda key: (counts[key] - exact[key], str(key)))
    while sum(counts.values()) > total:
        key = max((k for k in counts if counts[k] > 1), key=lambda k: (counts[k] - exact[k], str(k)))
        counts[key] -= 1
    while sum(counts.values()) < total:
        key = next(k for k in by_remainder if counts[k] < sizes[k])
        counts[key] += 1
        by_remainder.remove(key)
        by_remainder.append(key)
    return counts


def _item(row: Mapping[str, Any], position: int, column: str) -> SampleItem:
    scores = {c: float(row[c]) for c in _SCORE_COLUMNS if c in row and row[c] is not None and not pd.isna(row[c])}
    return SampleItem(
        item=str(row["_item"]), position=position, band=int(row["_band"]), site=str(row["_site"]),
        url_a=str(row["url_a"]), url_b=str(row["url_b"]), text_a=str(row["text_a"]), text_b=str(row["text_b"]), scores=scores,
    )  # fmt: skip
