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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

Link = tuple[tuple[int, ...], tuple[int, ...]]

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


def score_alignments(gold: Sequence[Sequence[Link]], predicted: Sequence[Sequence[Link]]) -> AlignmentScores:
    """Score predicted links against gold links, one sequence of links per document."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold documents but {len(predicted)} predicted ones")
    p_total = p_strict = p_lax = r_total = r_strict = r_lax = 0
    for gold_links, predicted_links in zip(gold, predicted, strict=True):
        total, strict, lax = _count_matches(gold_links, predicted_links)
        p_total, p_strict, p_lax = p_total + total, p_strict + strict, p_lax + lax
        gold_full = [link for link in gold_links if link[0] and link[1]]
        predicted_full = [link for link in predicted_links if link[0] and link[1]]
        total, strict, lax = _count_matches(predicted_full, gold_full)
        r_total, r_strict, r_lax = r_total + total, r_strict + strict, r_lax + lax
    precision_strict, recall_strict = _ratio(p_strict, p_total), _ratio(r_strict, r_total)
    precision_lax, recall_lax = _ratio(p_lax, p_total), _ratio(r_lax, r_total)
    return AlignmentScores(
        precision_strict=precision_strict,
        recall_strict=recall_strict,
        f1_strict=_f1(precision_strict, recall_strict),
        precision_lax=precision_lax,
        recall_lax=recall_lax,
        f1_lax=_f1(precision_lax, recall_lax),
    )
