"""Scoring sentence alignments against gold beads.

Strict and lax precision, recall and F1 over alignment links, as defined by Vecalign's ``score.py``
(Thompson and Koehn, 2019, after Sennrich and Volk, 2011), so that our figures sit beside the
published ones on the same gold data:

- a link is a bead ``(source ids, target ids)``; beads empty on both sides are ignored;
- strict: a predicted link counts only if the gold has exactly that link;
- lax: a predicted link also counts if it shares a source sentence with a gold link and a target
  sentence with that same gold link's target side;
- precision is over all predicted links, null links (1-0, 0-1) included; recall is over the gold
  links with both sides non-empty, matched against the predicted links with both sides non-empty:
  a null link can lower precision but is never required for recall.

Counts are summed over all documents before dividing (micro average), as Vecalign does.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

Link = tuple[tuple[int, ...], tuple[int, ...]]
#: One value for each of an aligner's choices (knob name -> value).
Setting = dict[str, Any]

_LINE = re.compile(r"^\s*\[([\d,\s]*)\]\s*:\s*\[([\d,\s]*)\]\s*$")


@dataclass(frozen=True)
class AlignmentScores:
    """Micro-averaged strict and lax precision, recall and F1 (0.0 where undefined)."""

    precision_strict: float
    recall_strict: float
    f1_strict: float
    precision_lax: float
    recall_lax: float
    f1_lax: float


def parse_links(lines: Iterable[str]) -> list[Link]:
    """Parse ``[0, 1]:[2]`` lines (the Bleualign/Vecalign gold format); blank lines are skipped."""
    links: list[Link] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match is None:
            raise ValueError(f"line {number}: expected '[ids]:[ids]', got {line.strip()!r}")
        src, tgt = (tuple(int(x) for x in group.split(",") if x.strip()) for group in match.groups())
        links.append((src, tgt))
    return links


def read_links(path: Path) -> list[Link]:
    """Read a gold alignment file in the ``[ids]:[ids]`` format."""
    return parse_links(path.read_text(encoding="utf-8").splitlines())


def _count_matches(reference: Iterable[Link], candidate: Iterable[Link]) -> tuple[int, int, int]:
    """(candidate links, strict matches, lax matches) of ``candidate`` judged against ``reference``."""
    reference_set = {link for link in reference if link[0] or link[1]}
    targets_of_source: defaultdict[int, set[int]] = defaultdict(set)
    for src, tgt in reference_set:
        for s in src:
            targets_of_source[s].update(tgt)
    total = strict = lax = 0
    for src, tgt in {link for link in candidate if link[0] or link[1]}:
        total += 1
        if (src, tgt) in reference_set:
            strict += 1
            lax += 1
        elif any(t in targets_of_source[s] for s in src for t in tgt):
            lax += 1
    return total, strict, lax


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@dataclass(frozen=True)
class LinkCounts:
    """The counts behind the scores of one or more documents; counts add, so scores pool over any set of files.

    ``predicted*``: predicted links, and how many of them match strictly and laxly (precision);
    ``gold*``: gold links with both sides non-empty, and how many are matched (recall).
    """

    predicted: int = 0
    predicted_strict: int = 0
    predicted_lax: int = 0
    gold: int = 0
    gold_strict: int = 0
    gold_lax: int = 0

    def __add__(self, other: LinkCounts) -> LinkCounts:
        return LinkCounts(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def scores(self) -> AlignmentScores:
        """Strict and lax precision, recall and F1 of these counts (micro average)."""
        precision_strict, recall_strict = _ratio(self.predicted_strict, self.predicted), _ratio(self.gold_strict, self.gold)
        precision_lax, recall_lax = _ratio(self.predicted_lax, self.predicted), _ratio(self.gold_lax, self.gold)
        return AlignmentScores(
            precision_strict=precision_strict,
            recall_strict=recall_strict,
            f1_strict=_f1(precision_strict, recall_strict),
            precision_lax=precision_lax,
            recall_lax=recall_lax,
            f1_lax=_f1(precision_lax, recall_lax),
        )


def count_links(gold_links: Sequence[Link], predicted_links: Sequence[Link]) -> LinkCounts:
    """The :class:`LinkCounts` of one document's predicted links against its gold links."""
    precision = _count_matches(gold_links, predicted_links)
    gold_full = [link for link in gold_links if link[0] and link[1]]
    predicted_full = [link for link in predicted_links if link[0] and link[1]]
    recall = _count_matches(predicted_full, gold_full)
    return LinkCounts(*precision, *recall)


def score_alignments(gold: Sequence[Sequence[Link]], predicted: Sequence[Sequence[Link]]) -> AlignmentScores:
    """Score predicted links against gold links, one sequence of links per document."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold documents but {len(predicted)} predicted ones")
    return sum(map(count_links, gold, predicted), LinkCounts()).scores()


def pooled(counts: Mapping[str, LinkCounts], files: Iterable[str]) -> AlignmentScores:
    """The scores of ``files`` counted together (``counts``: file name -> its counts)."""
    return sum((counts[name] for name in files), LinkCounts()).scores()


def coordinate_ascent(options: Mapping[str, Sequence[Any]], score: Callable[[Setting], float]) -> Setting:
    """The setting of the knobs ``options`` (name -> candidate values) that a greedy coordinate-wise search reaches.

    It starts from each knob's middle value (the second of two); a pass tries, knob after knob, each
    other value of that knob alone and keeps a change only when ``score`` rises strictly; passes repeat
    until one changes nothing. It scores the sum of the knobs' value counts per pass where the whole
    grid scores their product (7 knobs of 2-4 values: about 60 settings instead of 1,300), at the risk
    of a local optimum; ties keep the earlier setting, so the search is deterministic.
    """
    setting = {knob: values[len(values) // 2] for knob, values in options.items()}
    best = score(setting)
    changed = True
    while changed:
        changed = False
        for knob, values in options.items():
            for value in values:
                candidate = {**setting, knob: value}
                if value != setting[knob] and (candidate_score := score(candidate)) > best:
                    setting, best, changed = candidate, candidate_score, True
    return setting


def select_setting(
    options: Mapping[str, Sequence[Any]], counts_of: Callable[[Setting], Mapping[str, LinkCounts]], files: Sequence[str]
) -> Setting:
    """The setting with the highest strict F1 pooled over ``files``, by :func:`coordinate_ascent`.

    ``counts_of(setting)`` gives every file's :class:`LinkCounts` when aligned with ``setting``; the
    search asks for the same setting again across calls, so the caller should remember them.
    """
    return coordinate_ascent(options, lambda setting: pooled(counts_of(setting), files).f1_strict)


def leave_one_file_out(
    options: Mapping[str, Sequence[Any]], counts_of: Callable[[Setting], Mapping[str, LinkCounts]], files: Sequence[str]
) -> dict[str, Setting]:
    """For each file, the setting :func:`select_setting` chooses on all the other files.

    Aligning each file with its own setting measures the whole procedure (aligner and selection)
    on data it did not see, which the figure with the setting chosen on all files does not.
    """
    return {held_out: select_setting(options, counts_of, [name for name in files if name != held_out]) for held_out in files}
