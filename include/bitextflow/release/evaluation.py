"""A person's judgement of a release: a reproducible stratified sample of its sentence pairs, the labels given to
it, the precision they measure with a 95% interval, and the margin threshold they imply.

The sample is :func:`bitextflow.release.evaluation_sample.draw_sample`'s (stratified by score band and site).

The estimate (:func:`estimate`) is the stratified estimator of a proportion (Cochran, *Sampling Techniques*, 3rd
ed., 1977, section 5.3): each stratum's share of good pairs weighted by its share of the release's pairs. Its
interval is Wilson's score interval (E. B. Wilson, "Probable inference, the law of succession, and statistical
inference", JASA 22, 1927), taken at the effective sample size of the stratified design (Kish, *Survey Sampling*,
1965; for proportions near 0 or 1, E. L. Korn and B. I. Graubard, "Confidence intervals for proportions with small
expected number of positive counts estimated from survey data", Survey Methodology 24(2), 1998): a simple random
sample is one stratum, and the interval is then exactly Wilson's. Pairs labelled ``unsure`` are counted and left
out of the precision, as in the manual evaluations of ParaCrawl and MaCoCu.

Several people may label one sample. Each person's latest label of a pair counts; a pair's label is the one most of
its labellers gave (a tie is ``unsure``), and the agreement shown is the share of pairs labelled by two or more
people on which all of them agree.

The threshold curve (:func:`threshold_curve`) restricts the same estimator to the pairs whose score is at least a
threshold, so it shows what raising ``score.margin_threshold`` would give and cost; a threshold below the one the
run used cannot be judged, since the pairs under it are not in the release. :func:`fit_threshold` picks the lowest
threshold whose estimate reaches the precision a user names.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bitextflow.errors import BitextflowError
from bitextflow.release.evaluation_sample import Sample

LabelValue = Literal["good", "bad", "unsure"]
LABEL_VALUES: tuple[LabelValue, ...] = ("good", "bad", "unsure")
_Z95 = 1.959963984540054


@dataclass(frozen=True)
class Label:
    """One person's judgement of one pair of a sample; stored as given, never changed (a new label supersedes)."""

    item: str
    label: LabelValue
    annotator: str
    at: str
    seed: int
    size: int
    comment: str = ""

    def __post_init__(self) -> None:
        if self.label not in LABEL_VALUES:
            raise BitextflowError(f"label {self.label!r} is not one of {', '.join(LABEL_VALUES)}")
        if not self.annotator.strip():
            raise BitextflowError("a label needs the name of who gave it (annotator)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Label:
        try:
            return cls(
                item=str(data["item"]), label=data["label"], annotator=str(data["annotator"]), at=str(data["at"]),
                seed=int(data["seed"]), size=int(data["size"]), comment=str(data.get("comment") or ""),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise BitextflowError(f"not a label (item, label, annotator, at, seed, size): {dict(data)!r}") from exc


@dataclass(frozen=True)
class Interval:
    """A proportion with its 95% interval and the counts behind it."""

    precision: float | None
    low: float | None
    high: float | None
    good: int
    bad: int
    unsure: int

    @property
    def judged(self) -> int:
        return self.good + self.bad

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "judged": self.judged}


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    kept_pairs: int
    estimate: Interval


@dataclass
class Evaluation:
    """What the labels of a sample measure (:func:`estimate`)."""

    pair: str
    version: int
    seed: int
    size: int
    score_column: str
    release_pairs: int
    labelled: int
    annotators: list[str]
    overall: Interval
    method: str
    per_band: dict[str, Interval] = field(default_factory=dict)
    per_site: dict[str, Interval] = field(default_factory=dict)
    agreement: float | None = None
    shared_items: int = 0
    curve: list[CurvePoint] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pair": self.pair, "version": self.version, "seed": self.seed, "size": self.size,
            "score_column": self.score_column, "release_pairs": self.release_pairs, "labelled": self.labelled,
            "annotators": self.annotators, "method": self.method, "overall": self.overall.to_dict(),
            "per_band": {k: v.to_dict() for k, v in self.per_band.items()},
            "per_site": {k: v.to_dict() for k, v in self.per_site.items()},
            "agreement": self.agreement, "shared_items": self.shared_items,
            "curve": [{"threshold": p.threshold, "kept_pairs": p.kept_pairs, **p.estimate.to_dict()} for p in self.curve],
        }  # fmt: skip


def wilson_interval(good: float, n: float, z: float = _Z95) -> tuple[float, float]:
    """Wilson's score interval for ``good`` successes in ``n`` trials (``n`` may be an effective, fractional size)."""
    if n <= 0:
        raise BitextflowError("a proportion of nothing has no interval: label at least one pair good or bad")
    p = good / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def stratified_interval(strata: Sequence[tuple[int, int, int]], z: float = _Z95) -> tuple[float, float, float]:
    """(precision, low, high) from ``(pairs in the release, good, judged)`` per stratum (module docstring).

    Strata with no judged pair are left out and the weights of the rest renormalised: the estimate then speaks for
    the strata the labels reached, which the per-band and per-site figures show."""
    judged = [(pairs, good, n) for pairs, good, n in strata if n > 0]
    if not judged:
        raise BitextflowError("no pair of the sample is labelled good or bad yet")
    total = sum(pairs for pairs, _, _ in judged)
    weights = [pairs / total for pairs, _, _ in judged]
    precision = sum(w * good / n for w, (_, good, n) in zip(weights, judged, strict=True))
    # with-replacement variance: one stratum gives p(1-p)/n, so the interval is then exactly Wilson's
    variance = sum(w * w * (good / n) * (1 - good / n) / n for w, (_, good, n) in zip(weights, judged, strict=True))
    judged_total = sum(n for _, _, n in judged)
    if variance > 0 and 0 < precision < 1:
        effective = min(precision * (1 - precision) / variance, judged_total)
    else:  # Korn and Graubard: at 0 or 1 the design effect is unknown; take the sample's own size
        effective = judged_total
    low, high = wilson_interval(precision * effective, effective, z)
    return precision, low, high


def consensus(labels: Iterable[Label], sample: Sample) -> tuple[dict[str, LabelValue], float | None, int]:
    """Each item's label (the majority of its labellers' latest labels), the agreement, and the items shared."""
    latest: dict[tuple[str, str], Label] = {}
    for label in sorted(labels, key=lambda lb: lb.at):
        if label.seed == sample.seed and label.size == sample.size and sample.item(label.item) is not None:
            latest[(label.item, label.annotator)] = label
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for (item, _), label in latest.items():
        votes[item][label.label] += 1
    decided: dict[str, LabelValue] = {}
    for item, counter in votes.items():
        ranked = counter.most_common()
        decided[item] = "unsure" if len(ranked) > 1 and ranked[0][1] == ranked[1][1] else ranked[0][0]  # type: ignore[assignment]
    shared = [counter for counter in votes.values() if sum(counter.values()) > 1]
    agreement = sum(len(counter) == 1 for counter in shared) / len(shared) if shared else None
    return decided, agreement, len(shared)


def _interval(strata_counts: Mapping[Any, tuple[int, Counter[str]]]) -> Interval:
    good = sum(c["good"] for _, c in strata_counts.values())
    bad = sum(c["bad"] for _, c in strata_counts.values())
    unsure = sum(c["unsure"] for _, c in strata_counts.values())
    if good + bad == 0:
        return Interval(None, None, None, good, bad, unsure)
    precision, low, high = stratified_interval([(pairs, c["good"], c["good"] + c["bad"]) for pairs, c in strata_counts.values()])
    return Interval(round(precision, 4), round(low, 4), round(high, 4), good, bad, unsure)


def _strata_counts(
    sample: Sample, decided: Mapping[str, LabelValue], threshold: float | None = None, keep: Any = None
) -> dict[tuple[int, str], tuple[int, Counter[str]]]:
    """(pairs in the release, label counts) per stratum, for the strata ``keep`` accepts and scores >= ``threshold``."""
    counts: dict[tuple[int, str], tuple[int, Counter[str]]] = {}
    for stratum in sample.strata:
        if keep is not None and not keep(stratum):
            continue
        pairs = stratum.pairs if threshold is None else sum(score >= threshold for score in stratum.scores)
        counts[(stratum.band, stratum.site)] = (pairs, Counter())
    for item in sample.items:
        key = (item.band, item.site)
        if item.item in decided and key in counts and (threshold is None or item.scores[sample.score_column] >= threshold):
            counts[key][1][decided[item.item]] += 1
    return counts


def estimate(sample: Sample, labels: Iterable[Label], pair: str, version: int) -> Evaluation:
    """Precision of the release as the labels of ``sample`` measure it, per band and site, and its threshold curve."""
    labels = list(labels)
    decided, agreement, shared = consensus(labels, sample)
    overall = _interval(_strata_counts(sample, decided))
    per_band = {
        _band_name(sample, band): _interval(_strata_counts(sample, decided, keep=lambda s, b=band: s.band == b))
        for band in sorted({s.band for s in sample.strata})
    }
    per_site = {
        site: _interval(_strata_counts(sample, decided, keep=lambda s, h=site: s.site == h))
        for site in sorted({s.site for s in sample.strata})
    }
    return Evaluation(
        pair=pair, version=version, seed=sample.seed, size=sample.size, score_column=sample.score_column,
        release_pairs=sum(s.pairs for s in sample.strata), labelled=len(decided),
        annotators=sorted({lb.annotator for lb in labels if lb.seed == sample.seed and lb.size == sample.size}),
        overall=overall, method="wilson" if len(sample.strata) == 1 else "stratified", per_band=per_band,
        per_site=per_site, agreement=agreement, shared_items=shared, curve=threshold_curve(sample, decided),
    )  # fmt: skip


def _band_name(sample: Sample, band: int) -> str:
    edges = (-math.inf, *sample.band_edges, math.inf)
    low, high = edges[band], edges[band + 1]
    if low == -math.inf:
        return f"{sample.score_column} < {high:.3f}"
    return f"{sample.score_column} >= {low:.3f}" if high == math.inf else f"{low:.3f} - {high:.3f}"


def threshold_curve(sample: Sample, decided: Mapping[str, LabelValue]) -> list[CurvePoint]:
    """Estimated precision and kept pairs at the release's lowest score (every pair kept), then at each judged pair's
    score taken as the threshold."""
    lowest = min(min(stratum.scores) for stratum in sample.strata)
    judged = {item.scores[sample.score_column] for item in sample.items if decided.get(item.item) in ("good", "bad")}
    points = []
    for threshold in sorted(judged | {lowest}):
        counts = _strata_counts(sample, decided, threshold=threshold)
        points.append(CurvePoint(threshold, sum(pairs for pairs, _ in counts.values()), _interval(counts)))
    return points


def fit_threshold(evaluation: Evaluation, precision: float) -> CurvePoint:
    """The lowest threshold of the curve whose estimated precision reaches ``precision``."""
    if not 0 < precision <= 1:
        raise BitextflowError(f"--precision is a share of good pairs in (0, 1], not {precision}")
    for point in evaluation.curve:
        if point.estimate.precision is not None and point.estimate.precision >= precision:
            return point
    best = max((p.estimate.precision or 0.0 for p in evaluation.curve), default=None)
    raise BitextflowError(
        f"no threshold of {evaluation.score_column} reaches an estimated precision of {precision} on the labels of "
        f"{evaluation.pair} v{evaluation.version} (best: {best}); label more pairs, or name a lower precision"
    )


#: the option that sets a threshold on each score a sample can be stratified on
THRESHOLD_OPTIONS = {"margin_score": "score.margin_threshold", "alignment_score": "align.min_alignment_score"}


def calibration(evaluation: Evaluation, precision: float) -> dict[str, Any]:
    """:func:`fit_threshold`'s choice as ``bitextflow releases calibrate`` prints it: the option to set, the estimate
    there, the pairs it keeps and the share of the release it drops."""
    point = fit_threshold(evaluation, precision)
    return {
        "pair": evaluation.pair, "version": evaluation.version, "score": evaluation.score_column, "threshold": point.threshold,
        "set": f"{THRESHOLD_OPTIONS[evaluation.score_column]}={point.threshold}", **point.estimate.to_dict(),
        "kept_pairs": point.kept_pairs, "release_pairs": evaluation.release_pairs,
        "yield_cost": round(1 - point.kept_pairs / evaluation.release_pairs, 4),
    }  # fmt: skip


def format_evaluation(evaluation: Evaluation) -> str:
    """The figures as ``bitextflow releases evaluation`` prints them: all pairs, then per band and per site."""

    def line(name: str, figures: dict[str, object]) -> str:
        if figures["precision"] is None:
            return f"  {name:<34} no pair judged yet ({figures['unsure']} not sure)"
        return (
            f"  {name:<34} {figures['precision']:.3f}  [{figures['low']:.3f}, {figures['high']:.3f}]"
            f"  good {figures['good']}, bad {figures['bad']}, not sure {figures['unsure']}"
        )

    summary = evaluation.to_dict()
    agreement = (
        "none shared yet" if evaluation.agreement is None else f"{evaluation.agreement:.3f} on {evaluation.shared_items} pairs"
    )
    lines = [
        f"{evaluation.pair} v{evaluation.version}: sample of {evaluation.size} (seed {evaluation.seed}) from "
        f"{evaluation.release_pairs} pairs, {evaluation.labelled} labelled by {', '.join(evaluation.annotators) or 'nobody yet'}",
        f"precision with its 95% interval ({evaluation.method}); agreement between labellers: {agreement}",
        line("all pairs", summary["overall"]),
        *(line(band, figures) for band, figures in summary["per_band"].items()),
        *(line(site, figures) for site, figures in summary["per_site"].items()),
    ]
    return "\n".join(lines)
