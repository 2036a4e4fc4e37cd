"""Text quality of web paragraphs in the MaCoCu scheme: ours (leave-one-language-out), a rule baseline, a second annotator.

Data: ``--data DIR`` holds ``annotator{1,2}.LL.tsv`` (the MaCoCu corpus-evaluation annotations, RikVN/Corpus_Eval; here
``../shared/eval/macocu_text_quality``: bg, hr, is, mk, mt): tab-separated with a header, UTF-8 with a byte-order mark,
no quoting (a text may hold quotes), columns ``Source`` (the text), ``Source lang``, ``Evaluation`` (PT, RTE, PRT,
NRT, WLN), ``Description``, ``Time``. Every language found is scored; a language needs both annotators' files.

Metric: binary macro F1 of keep (``PT`` or ``RTE``) against the rest (the mean of the F1 of keep and of not-keep),
per language, against annotator 1; ``macro`` is the mean over languages.

- ``ours``: :mod:`bitextflow.extract.text_quality` with weights and threshold chosen WITHOUT the language scored
  (leave one language out): a coordinate search over the weights of its terms (grid ``GRID``, from all weights 1,
  ``ROUNDS`` rounds, a change kept when it raises the objective) with the best threshold for each candidate (among
  ``THRESHOLDS`` quantiles of the sums); the objective is the mean binary macro F1 over the other languages' texts as
  both annotators labelled them. Paragraphs are identified here (``detected_language`` None).
- ``shipped_in_sample``: the module's shipped weights (the same search on all languages) on all of them, in sample.
- ``baseline``: keep a text of at least 6 tokens that ends with punctuation
  (:func:`bitextflow.extract.sentences.ends_with_punctuation`).
- ``second_annotator``: annotator 2 scored against annotator 1 on the texts both labelled (joined on ``Source``; a
  text listed several times is paired occurrence by occurrence).

Speed (``documents_per_s``): :func:`~bitextflow.extract.text_quality.paragraph_quality` on every text of annotator 1,
one process, language identification included, its answer caches emptied before each of 3 passes, the best pass;
``documents_per_s_detected_given``: the same with the language passed in (as the extract stage has it).

    .venv/bin/python bench/text_quality.py [--data ../shared/eval/macocu_text_quality] [--json]

With no data there it prints why on stderr and, with ``--json``, ``{"skipped": true, ...}``; it exits 0.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bitextflow.extract import language
from bitextflow.extract import text_quality as tq
from bitextflow.extract.sentences import ends_with_punctuation
from bitextflow.text.languages import cld2_top

ROOT = Path(__file__).resolve().parents[1]
GRID = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)
ROUNDS = 3
THRESHOLDS = np.linspace(0.02, 0.98, 49)
WEIGHTED = tuple(tq.WEIGHTS)  # the terms that are weighed (``other`` is ruled on)

csv.field_size_limit(1 << 24)


def read(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return [
            (row["Source"], row["Evaluation"].strip()) for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        ]


def binary_macro_f1(gold: np.ndarray, predicted: np.ndarray) -> float:
    scores = []
    for g, p in ((gold, predicted), (~gold, ~predicted)):
        tp = int((g & p).sum())
        wrong = int((g ^ p).sum())
        scores.append(2 * tp / (2 * tp + wrong) if tp else 0.0)
    return sum(scores) / 2


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
    sums = [s.matrix @ weights for s in sets]
    best = (-1.0, 1.0)
    for threshold in np.quantile(np.concatenate(sums), THRESHOLDS):
        if threshold <= 0:
            continue
        mean = float(np.mean([binary_macro_f1(s.gold, (z <= threshold) & ~s.other) for s, z in zip(sets, sums, strict=True)]))
        if mean > best[0]:
            best = (mean, float(threshold))
    return best


def choose(sets: list[Labelled]) -> tuple[np.ndarray, float, float]:
    """Weights and threshold by coordinate search on ``sets``: (weights, threshold, the objective reached)."""
    weights = np.ones(len(WEIGHTED))
    objective, threshold = best_threshold(sets, weights)
    for _round in range(ROUNDS):
        for i in range(len(WEIGHTED)):
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


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/eval/macocu_text_quality")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    langs = sorted(
        p.name.split(".")[1]
        for p in args.data.glob("annotator1.*.tsv")
        if (args.data / f"annotator2.{p.name.split('.')[1]}.tsv").exists()
    )
    if not langs:
        reason = f"no annotator1.LL.tsv with its annotator2.LL.tsv in {args.data}"
        print(f"bench/text_quality.py: skipped: {reason}", file=sys.stderr)
        if args.json:
            print(json.dumps({"skipped": True, "reason": reason}))
        return 0

    rows = {(n, lang): read(args.data / f"annotator{n}.{lang}.tsv") for n in (1, 2) for lang in langs}
    found = {lang: {text: tq.terms(text, lang) for n in (1, 2) for text, _label in rows[n, lang]} for lang in langs}
    sets = {(n, lang): Labelled(rows[n, lang], found[lang]) for n in (1, 2) for lang in langs}

    results: dict[str, dict] = {}
    folds: dict[str, dict] = {}
    confusion: dict[str, dict] = {}
    shipped = np.array([tq.WEIGHTS[name] for name in WEIGHTED])
    for lang in langs:
        weights, threshold, objective = choose([s for (n, other), s in sets.items() if other != lang])
        held_out = sets[1, lang]
        ones, twos = paired(rows[1, lang], rows[2, lang])
        baseline = np.array([len(text.split()) >= 6 and ends_with_punctuation(text) for text in held_out.texts])
        results[lang] = {
            "ours": round(binary_macro_f1(held_out.gold, held_out.predict(weights, threshold)), 4),
            "baseline": round(binary_macro_f1(held_out.gold, baseline), 4),
            "second_annotator": round(binary_macro_f1(keep(ones), keep(twos)), 4),
            "shipped_in_sample": round(binary_macro_f1(held_out.gold, held_out.predict(shipped, tq.THRESHOLD)), 4),
            "texts": len(held_out.texts),
            "shared_texts": len(ones),
            "keep_share": round(float(held_out.gold.mean()), 4),
        }
        chosen = dict(zip(WEIGHTED, weights.tolist(), strict=True))
        folds[lang] = {"weights": chosen, "threshold": round(threshold, 4), "objective_on_the_others": round(objective, 4)}
        counts: Counter[tuple[str, str]] = Counter()
        for text, gold in zip(held_out.texts, held_out.labels, strict=True):
            counts[gold, tq.verdict(found[lang][text], chosen, threshold).label] += 1
        confusion[lang] = {g: {p: counts[g, p] for p in tq.QUALITY_LABELS if counts[g, p]} for g in tq.QUALITY_LABELS}
        print(f"fold {lang}: threshold {threshold:.3f}, weights {chosen}", flush=True)

    weights, threshold, objective = choose(list(sets.values()))
    on_all = {"weights": dict(zip(WEIGHTED, weights.tolist(), strict=True)), "threshold": round(threshold, 4)}
    print(f"on all languages (the shipped values come from this): threshold {threshold:.3f}, weights {on_all['weights']}")

    columns = ("ours", "baseline", "second_annotator", "shipped_in_sample")
    macro = {key: round(float(np.mean([results[lang][key] for lang in langs])), 4) for key in columns}
    texts = [(text, lang) for lang in langs for text, _label in rows[1, lang]]
    speed = throughput(texts, detected=False)
    speed_given = throughput(texts, detected=True)

    print(f"{'language':9} {'texts':>5} {'keep':>5} " + " ".join(f"{c:>17}" for c in columns))
    for lang in langs:
        r = results[lang]
        print(f"{lang:9} {r['texts']:5} {r['keep_share']:5.2f} " + " ".join(f"{r[c]:17.3f}" for c in columns))
    print(f"{'macro':21} " + " ".join(f"{macro[c]:17.3f}" for c in columns))
    print(
        f"(ours: leave one language out, against annotator 1; second_annotator on {sum(r['shared_texts'] for r in results.values())} shared texts)"
    )
    print(f"paragraphs/s, one core ({cpu_model()}): {speed:,.0f} identifying, {speed_given:,.0f} with the language given")
    if args.json:
        summary = {
            "languages": results,
            "macro": macro,
            "documents_per_s": round(speed, 1),
            "documents_per_s_detected_given": round(speed_given, 1),
            "leave_one_language_out": True,
            "folds": folds,
            "shipped": {"weights": dict(tq.WEIGHTS), "threshold": tq.THRESHOLD},
            "chosen_on_all_languages": on_all | {"objective": round(objective, 4)},
            "confusion_ours_vs_annotator1": confusion,
            "cpu": cpu_model(),
        }
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
