"""Text quality of web paragraphs in the MaCoCu scheme: ours (leave-one-language-out), a rule baseline, a second annotator.

Data: ``--data DIR`` holds ``annotator{1,2}.LL.tsv`` (the MaCoCu corpus-evaluation annotations, RikVN/Corpus_Eval; here
``../shared/eval/macocu_text_quality``: bg, hr, is, mk, mt): tab-separated with a header, UTF-8 with a byte-order mark,
no quoting (a text may hold quotes), columns ``Source`` (the text), ``Source lang``, ``Evaluation`` (PT, RTE, PRT,
NRT, WLN), ``Description``, ``Time``. Every language with an ``annotator1`` file is scored; ``annotator2`` is
optional (``second_annotator`` is null without it, and the macro figure is over the languages that have it).

Metric: binary macro F1 of keep (``PT`` or ``RTE``) against the rest (the mean of the F1 of keep and of not-keep),
per language, against annotator 1; ``macro`` is the mean over languages.

- ``ours``: :mod:`bitextflow.extract.text_quality` with weights and threshold chosen WITHOUT the language scored
  (leave one language out): a coordinate search over the weights of its terms (grid ``GRID``, from all weights 1,
  ``ROUNDS`` rounds, a change kept when it raises the objective) with the best threshold for each candidate (among
  ``THRESHOLDS`` quantiles of the sums); the objective is the mean binary macro F1 over the other languages' texts as
  both annotators labelled them. Paragraphs are identified here (``detected_language`` None). The search runs in
  ``--orders`` coordinate orders (the terms' own, then shuffled ones) and ``ours`` is the mean of their figures, each
  order's in ``ours_by_order``: one order's path through the grid moves the Maltese fold between 0.61 and 0.74, so a
  single order's figure cannot tell a better term from a luckier path. The confusion matrix counts every order's
  verdicts.
  With one language there is nothing to leave out, and ``ours`` is the shipped weights.
- ``shipped``: the module's shipped weights (the search in the terms' own order on bg, hr, is, mk and mt,
  :data:`~bitextflow.extract.text_quality.WEIGHTS_CHOSEN_ON`): in sample on those five, unseen on any other language;
  ``macro.shipped_unseen`` is their mean over the unseen ones, what a release's labels reach in a language nobody
  tuned them on.
- ``baseline``: keep a text of at least 6 tokens that ends with punctuation
  (:func:`bitextflow.extract.sentences.ends_with_punctuation`).
- ``second_annotator``: annotator 2 scored against annotator 1 on the texts both labelled (joined on ``Source``; a
  text listed several times is paired occurrence by occurrence).

Speed (``documents_per_s``): :func:`~bitextflow.extract.text_quality.paragraph_quality` on every text of annotator 1,
one process, language identification included, its answer caches emptied before each of 3 passes, the best pass;
``documents_per_s_detected_given``: the same with the language passed in (as the extract stage has it).

    .venv/bin/python bench/text_quality.py [--data ../shared/eval/macocu_text_quality] [--orders 5] [--json]

With no data there it prints why on stderr and, with ``--json``, ``{"skipped": true, ...}``; it exits 0.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from bitextflow.extract import language
from bitextflow.extract import text_quality as tq
from bitextflow.extract.sentences import ends_with_punctuation
from bitextflow.text.languages import cld2_top
from machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
GRID = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)
ROUNDS = 3
ORDERS = 5  # the terms' own coordinate order and four shuffled ones
THRESHOLDS = np.linspace(0.02, 0.98, 49)
WEIGHTED = tuple(tq.WEIGHTS)  # the terms that are weighed (``other`` is ruled on)

csv.field_size_limit(1 << 24)


def read(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return [
            (row["Source"], row["Evaluation"].strip()) for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        ]


def binary_macro_f1(gold: np.ndarray, predicted: np.ndarray) -> float:
    return float(binary_macro_f1_by_column(gold[:, None], predicted[:, None])[0])


def binary_macro_f1_by_column(gold: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """One figure per column of ``predicted`` (a column per threshold tried) against ``gold`` (one column)."""
    wrong = (gold ^ predicted).sum(axis=0)
    return (_f1((gold & predicted).sum(axis=0), wrong) + _f1((~gold & ~predicted).sum(axis=0), wrong)) / 2


def _f1(tp: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    return np.where(tp > 0, 2 * tp / np.maximum(2 * tp + wrong, 1), 0.0)


def keep(labels: Sequence[str]) -> np.ndarray:
    return np.array([label in tq.KEEP_LABELS for label in labels])


def paired(first: list[tuple[str, str]], second: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The two annotators' labels of the texts both labelled, occurrence by occurrence."""
    queue: dict[str, list[str]] = {}
    for text, label in second:
        queue.setdefault(text, []).append(label)
    ones, twos = [], []
    for text, label in first:
        if queue.get(text):
            ones.append(label)
            twos.append(queue[text].pop(0))
    return ones, twos


class Labelled:
    """One annotator's texts of one language: the term matrix, 'another language', and keep."""

    def __init__(self, rows: list[tuple[str, str]], found: dict[str, dict[str, float]]):
        self.texts = [text for text, _label in rows]
        self.labels = [label for _text, label in rows]
        self.gold = keep(self.labels)
        self.matrix = np.array([[found[text][name] for name in WEIGHTED] for text in self.texts])
        self.other = np.array([found[text]["other"] > 0 for text in self.texts])

    def predict(self, weights: np.ndarray, threshold: float) -> np.ndarray:
        return (self.matrix @ weights <= threshold) & ~self.other


def best_threshold(sets: list[Labelled], weights: np.ndarray) -> tuple[float, float]:
    """The threshold among ``THRESHOLDS`` quantiles of the sums with the best mean binary macro F1 over ``sets``, the
    lowest on a tie: (that mean, the threshold)."""
    sums = [s.matrix @ weights for s in sets]
    candidates = np.quantile(np.concatenate(sums), THRESHOLDS)
    per_set = [
        binary_macro_f1_by_column(s.gold[:, None], (z[:, None] <= candidates[None, :]) & ~s.other[:, None])
        for s, z in zip(sets, sums, strict=True)
    ]
    means = np.array([float(np.mean(column)) for column in np.array(per_set).T])
    means[candidates <= 0] = -1.0
    best = int(np.argmax(means))
    return (float(means[best]), float(candidates[best])) if means[best] >= 0 else (-1.0, 1.0)


def coordinate_orders(count: int) -> list[list[int]]:
    """The terms' own order, then ``count - 1`` shuffled ones (``random.Random(seed).shuffle``, seeds 0, 1, ...)."""
    orders = [list(range(len(WEIGHTED)))]
    for seed in range(count - 1):
        order = list(range(len(WEIGHTED)))
        random.Random(seed).shuffle(order)
        orders.append(order)
    return orders


def choose(sets: list[Labelled], order: Sequence[int]) -> tuple[np.ndarray, float, float]:
    """Weights and threshold by coordinate search on ``sets``, visiting the weights in ``order``: (weights, threshold,
    the objective reached)."""
    weights = np.ones(len(WEIGHTED))
    objective, threshold = best_threshold(sets, weights)
    for _round in range(ROUNDS):
        for i in order:
            for value in GRID:
                trial = weights.copy()
                trial[i] = value
                reached, at = best_threshold(sets, trial)
                if reached > objective + 1e-9:
                    objective, threshold, weights = reached, at, trial
    return weights, threshold, objective


def throughput(texts: list[tuple[str, str]], detected: bool) -> float:
    best = float("inf")
    for _ in range(3):
        cld2_top.cache_clear()
        language.second_opinion.cache_clear()
        start = time.perf_counter()
        for text, lang in texts:
            tq.paragraph_quality(text, lang, detected_language=lang if detected else None)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/eval/macocu_text_quality")
    parser.add_argument("--orders", type=int, default=ORDERS, help=f"coordinate orders the search runs in (default {ORDERS})")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.orders < 1:
        parser.error(f"--orders {args.orders}: the search needs at least one coordinate order; give 1 or more (default {ORDERS})")
    langs = sorted(p.name.split(".")[1] for p in args.data.glob("annotator1.*.tsv"))
    if not langs:
        reason = f"no annotator1.LL.tsv in {args.data}"
        print(f"bench/text_quality.py: skipped: {reason}", file=sys.stderr)
        if args.json:
            print(json.dumps({"skipped": True, "reason": reason}))
        return 0

    rows = {
        (n, lang): read(args.data / f"annotator{n}.{lang}.tsv")
        for n in (1, 2)
        for lang in langs
        if (args.data / f"annotator{n}.{lang}.tsv").exists()
    }
    found = {
        lang: {text: tq.terms(text, lang) for (_n, of), texts in rows.items() if of == lang for text, _label in texts}
        for lang in langs
    }
    sets = {(n, lang): Labelled(texts, found[lang]) for (n, lang), texts in rows.items()}
    orders = coordinate_orders(args.orders)
    shipped = np.array([tq.WEIGHTS[name] for name in WEIGHTED])

    results: dict[str, dict] = {}
    folds: dict[str, list[dict]] = {}
    confusion: dict[str, dict] = {}
    for lang in langs:
        held_out = sets[1, lang]
        if len(langs) > 1:
            by_order, folds[lang], counts = leave_out(lang, sets, orders, found[lang])
        else:  # nothing to leave out: the weights as shipped, chosen on other languages unless this is one of them
            by_order = [binary_macro_f1(held_out.gold, held_out.predict(shipped, tq.THRESHOLD))]
            counts = Counter(
                (gold, tq.verdict(found[lang][text]).label) for text, gold in zip(held_out.texts, held_out.labels, strict=True)
            )
        baseline = np.array([len(text.split()) >= 6 and ends_with_punctuation(text) for text in held_out.texts])
        ones, twos = paired(rows[1, lang], rows.get((2, lang), []))
        results[lang] = {
            "ours": round(float(np.mean(by_order)), 4),
            "ours_by_order": [round(f1, 4) for f1 in by_order],
            "baseline": round(binary_macro_f1(held_out.gold, baseline), 4),
            "second_annotator": round(binary_macro_f1(keep(ones), keep(twos)), 4) if ones else None,
            "shipped": round(binary_macro_f1(held_out.gold, held_out.predict(shipped, tq.THRESHOLD)), 4),
            "shipped_weights_seen_it": lang in tq.WEIGHTS_CHOSEN_ON,
            "texts": len(held_out.texts),
            "shared_texts": len(ones),
            "keep_share": round(float(held_out.gold.mean()), 4),
        }
        confusion[lang] = {g: {p: counts[g, p] for p in tq.QUALITY_LABELS if counts[g, p]} for g in tq.QUALITY_LABELS}
        print(f"{lang}: ours {results[lang]['ours']:.3f}, by order {results[lang]['ours_by_order']}", flush=True)

    weights, threshold, objective = choose(list(sets.values()), orders[0])
    on_all = {"weights": dict(zip(WEIGHTED, weights.tolist(), strict=True)), "threshold": round(threshold, 4)}
    print(f"chosen on all these languages in the terms' own order: threshold {threshold:.3f}, weights {on_all['weights']}")

    columns = ("ours", "baseline", "second_annotator", "shipped")
    macro = {key: mean_over(results[lang][key] for lang in langs) for key in columns}
    macro["shipped_unseen"] = mean_over(results[lang]["shipped"] for lang in langs if lang not in tq.WEIGHTS_CHOSEN_ON)
    by_order_macro = [
        mean_over(results[lang]["ours_by_order"][k] for lang in langs) for k in range(len(orders) if len(langs) > 1 else 1)
    ]
    texts = [(text, lang) for lang in langs for text, _label in rows[1, lang]]
    speed = throughput(texts, detected=False)
    speed_given = throughput(texts, detected=True)

    print(f"{'language':9} {'texts':>5} {'keep':>5} " + " ".join(f"{c:>17}" for c in columns))
    for lang in langs:
        r = results[lang]
        print(f"{lang:9} {r['texts']:5} {r['keep_share']:5.2f} " + " ".join(f"{shown(r[c]):>17}" for c in columns))
    print(f"{'macro':21} " + " ".join(f"{shown(macro[c]):>17}" for c in columns))
    ours_is = (
        f"leave one language out, the mean over {len(orders)} coordinate orders of the search, each order's macro {by_order_macro}"
        if len(langs) > 1
        else "the shipped weights (one language: nothing to leave out)"
    )
    print(
        f"(ours: {ours_is}; against annotator 1; second_annotator on {sum(r['shared_texts'] for r in results.values())} shared texts)"
    )
    if macro["shipped_unseen"] is not None:
        print(
            f"shipped weights on the languages they were not chosen on (not {', '.join(tq.WEIGHTS_CHOSEN_ON)}): {macro['shipped_unseen']:.3f}"
        )
    print(f"paragraphs/s, one core ({cpu_model()}): {speed:,.0f} identifying, {speed_given:,.0f} with the language given")
    if args.json:
        summary = {
            "languages": results,
            "macro": macro,
            "ours_by_order": by_order_macro,
            "documents_per_s": round(speed, 1),
            "documents_per_s_detected_given": round(speed_given, 1),
            "leave_one_language_out": len(langs) > 1,
            "folds": folds,
            "shipped": {"weights": dict(tq.WEIGHTS), "threshold": tq.THRESHOLD, "chosen_on": list(tq.WEIGHTS_CHOSEN_ON)},
            "chosen_on_all_languages": on_all | {"objective": round(objective, 4)},
            "confusion_ours_vs_annotator1": confusion,
            "cpu": cpu_model(),
        }
        print(json.dumps(summary))
    return 0


def leave_out(
    lang: str, sets: dict[tuple[int, str], Labelled], orders: list[list[int]], found: dict[str, dict[str, float]]
) -> tuple[list[float], list[dict], Counter[tuple[str, str]]]:
    """``lang``'s annotator-1 figure with weights chosen on the other languages, in each order: the figures, each
    order's choice, and the five-label confusion over every order's verdicts."""
    held_out = sets[1, lang]
    training = [s for (_n, other), s in sets.items() if other != lang]
    by_order, chosen_by_order = [], []
    counts: Counter[tuple[str, str]] = Counter()
    for order in orders:
        weights, threshold, objective = choose(training, order)
        by_order.append(binary_macro_f1(held_out.gold, held_out.predict(weights, threshold)))
        chosen = dict(zip(WEIGHTED, weights.tolist(), strict=True))
        chosen_by_order.append(
            {"order": [WEIGHTED[i] for i in order], "weights": chosen, "threshold": round(threshold, 4)}
            | {"objective_on_the_others": round(objective, 4), "ours": round(by_order[-1], 4)}
        )
        for text, gold in zip(held_out.texts, held_out.labels, strict=True):
            counts[gold, tq.verdict(found[text], chosen, threshold).label] += 1
    return by_order, chosen_by_order, counts


def mean_over(figures: Iterable[float | None]) -> float | None:
    """The mean of the figures there are (a language without a second annotator has none); None when none is."""
    present = [figure for figure in figures if figure is not None]
    return round(float(np.mean(present)), 4) if present else None


def shown(figure: float | None) -> str:
    return "-" if figure is None else f"{figure:.3f}"


if __name__ == "__main__":
    sys.exit(main())
