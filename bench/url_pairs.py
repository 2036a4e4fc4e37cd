"""URL-pair matching on the WMT16 document-alignment gold: recall of the URL rules (and URL model).

For each web site of the gold, the English URLs are matched 1-1 to the French URLs using the URLs
alone (:func:`bitextflow.crawl.urlpairs.match_url_pairs`), and the matches are compared with the gold
pairs. The crawled documents of WMT16 are not available here, so the candidates are the gold URLs only
(no distractor URLs): recall is comparable in spirit, not in setting, with the smart-crawling seed's
figures on the full task (rule baseline 59.91, XLM-R URL-pair model 62.99).

The URL-pair model (:mod:`bitextflow.models.url_models`, the smart crawler's P(parallel(u, v))) is
trained here on the gold pairs of half of the web sites (chosen by a hash of the site name) with the
seed's synthetic negatives, and tested on the other half: each English URL's ``--candidates`` French
URLs of its site with the most URL tokens in common are scored, and pairs are taken 1-1 greedily by
probability (at least 0.5). ``recall.url-model`` is the model's recall on the test sites;
``test_sites`` gives url-rules, the model, and url-rules then the model on what the rules left, all on
those same test sites.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from bitextflow.crawl.urlpairs import PASSES, match_url_pairs, site_of
from bitextflow.models import url_training, url_training_data
from bitextflow.text.urls import url_tokens

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "wmt16_docalign_test_gold"


def read_labels(path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """``test.pairs.manually_classified``: (en, fr) -> (URL-visible 1/0, code)."""
    labels = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            if len(fields) == 4:
                labels[fields[2], fields[3]] = (fields[0], fields[1])
    return labels


def is_training_site(site: str) -> bool:
    return zlib.crc32(site.encode("utf-8")) % 2 == 0


def model_matches(
    model: url_training.TrainedParallelModel, english: Sequence[str], french: Sequence[str], candidates: int, max_length: int
) -> list[tuple[str, str]]:
    """1-1 matches per site: each English URL against its nearest French URLs, greedy by P(parallel)."""
    by_site: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for url in english:
        by_site[site_of(url)][0].append(url)
    for url in french:
        by_site[site_of(url)][1].append(url)
    scored: list[tuple[float, str, str]] = []
    for side_a, side_b in by_site.values():
        tokens_b = {url: url_tokens(url) for url in side_b}
        pairs = []
        for url in side_a:
            tokens_a = url_tokens(url)
            nearest = sorted(side_b, key=lambda b: -len(tokens_a & tokens_b[b]) / max(1, len(tokens_a | tokens_b[b])))
            pairs += [(url, b) for b in nearest[:candidates]]
        scored += [(p, a, b) for p, (a, b) in zip(model.probabilities(pairs, max_length), pairs, strict=True)]
    matches, used = [], set()
    for probability, a, b in sorted(scored, reverse=True):
        if probability >= 0.5 and a not in used and b not in used:
            matches.append((a, b))
            used.update((a, b))
    return matches


def recall_of(matches: Sequence[tuple[str, str]], gold: set[tuple[str, str]]) -> dict[str, float | int]:
    correct = sum(1 for pair in matches if pair in gold)
    return {
        "matches": len(matches),
        "correct": correct,
        "recall": round(correct / len(gold), 4) if gold else 0.0,
        "precision": round(correct / len(matches), 4) if matches else 0.0,
    }


def evaluate_model(gold: Sequence[tuple[str, str]], args: argparse.Namespace) -> dict:
    """Train the URL-pair model on the training sites, measure it and url-rules on the test sites."""
    import torch

    torch.set_num_threads(args.threads)
    train = [pair for pair in gold if is_training_site(site_of(pair[0]))]
    test = [pair for pair in gold if not is_training_site(site_of(pair[0]))]
    sample = random.Random(0).sample(train, min(len(train), args.max_train_pairs))
    pages = [(a, "en") for a, _ in train] + [(b, "fr") for _, b in train]
    settings = url_training.TrainingSettings(epochs=args.epochs, max_length=args.max_length, held_out_share=0.1)
    started = time.perf_counter()
    model = url_training.train_parallel_model(sample, pages, settings)
    train_seconds = time.perf_counter() - started
    english, french = [a for a, _ in test], [b for _, b in test]
    test_gold = set(test)
    started = time.perf_counter()
    by_model = model_matches(model, english, french, args.candidates, args.max_length)
    model_seconds = time.perf_counter() - started
    by_rules = [(a, b) for a, b, _ in match_url_pairs(english, french, "en", "fr")]
    left_a = [url for url in english if url not in {a for a, _ in by_rules}]
    left_b = [url for url in french if url not in {b for _, b in by_rules}]
    combined = by_rules + model_matches(model, left_a, left_b, args.candidates, args.max_length)
    return {
        "train_sites": len({site_of(a) for a, _ in train}),
        "test_sites": len({site_of(a) for a, _ in test}),
        "train_pairs": len(sample),
        "test_pairs": len(test_gold),
        "train_seconds": round(train_seconds, 1),
        "held_out_metrics": model.metrics,
        "examples": model.kinds,
        "candidates_per_url": args.candidates,
        "url-rules": recall_of(by_rules, test_gold),
        "url-model": {**recall_of(by_model, test_gold), "seconds": round(model_seconds, 1)},
        "url-rules+url-model": recall_of(combined, test_gold),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"gold folder with test.pairs (default {DEFAULT_DATA})")
    parser.add_argument("--no-model", action="store_true", help="url-rules only (url-model is reported as null)")
    parser.add_argument("--max-train-pairs", type=int, default=400, help="gold pairs of the training sites trained on")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs of the URL-pair model")
    parser.add_argument("--max-length", type=int, default=64, help="tokens of a URL pair")
    parser.add_argument("--candidates", type=int, default=5, help="French URLs scored per English URL")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the cores are shared)")
    args = parser.parse_args(argv)
    gold_file = args.data / "test.pairs"
    if not gold_file.exists():
        print(f"url_pairs: {gold_file} is absent (the gold data ships in ../shared/eval)", file=sys.stderr)
        return 2
    gold = url_training_data.read_gold_pairs(gold_file)
    gold_set = set(gold)
    labels = read_labels(args.data / "test.pairs.manually_classified")
    english = [a for a, _ in gold]
    french = [b for _, b in gold]

    result: dict = {"gold_pairs": len(gold_set), "sites": len({a.split("/")[2] for a in english}), "recall": {}, "rules": {}}
    passes = [name for name, _ in PASSES]
    for upto in range(1, len(passes) + 1):
        used = passes[:upto]
        started = time.perf_counter()
        matches = match_url_pairs(english, french, "en", "fr", used)
        seconds = time.perf_counter() - started
        correct = [(a, b) for a, b, _ in matches if (a, b) in gold_set]
        row = {
            "matches": len(matches),
            "correct": len(correct),
            "recall": round(len(correct) / len(gold_set), 4),
            "precision": round(len(correct) / len(matches), 4) if matches else 0.0,
            "by_pass": dict(Counter(name for *_, name in matches)),
            "seconds": round(seconds, 3),
        }
        if labels:
            visible = {pair for pair, (flag, _code) in labels.items() if flag == "1"}
            row["recall_url_visible"] = round(len(set(correct) & visible) / len(visible), 4) if visible else 0.0
            by_code: Counter[str] = Counter(code for pair, (_flag, code) in labels.items() if pair in set(correct))
            row["correct_by_code"] = dict(by_code.most_common())
        result["rules"]["+".join(used)] = row
    full = result["rules"]["+".join(passes)]
    model = None if args.no_model else evaluate_model(gold, args)
    result["test_sites"] = model
    result["recall"] = {"url-rules": full["recall"], "url-model": model["url-model"]["recall"] if model else None}
    result["precision"] = {"url-rules": full["precision"], "url-model": model["url-model"]["precision"] if model else None}
    result["url_rule_baseline"] = result["rules"][passes[0]]["recall"]
    result["published"] = {"rule_baseline": 0.5991, "xlmr_url_pair_model": 0.6299, "setting": "full WMT16 task, with distractors"}
    if labels:
        result["gold_url_visible"] = sum(flag == "1" for flag, _ in labels.values())

    print(f"WMT16 en-fr gold: {len(gold_set)} pairs on {result['sites']} sites (candidates: the gold URLs only)")
    header = f"{'rules':<34} {'matches':>8} {'correct':>8} {'precision':>10} {'recall':>8}"
    print(header)
    print("-" * len(header))
    for name, row in result["rules"].items():
        print(f"{name:<34} {row['matches']:>8} {row['correct']:>8} {row['precision']:>10.3f} {row['recall']:>8.3f}")
    if model:
        print(f"URL-pair model: trained on {model['train_pairs']} pairs of {model['train_sites']} sites in "
              f"{model['train_seconds']} s; tested on {model['test_pairs']} pairs of the other {model['test_sites']} sites")  # fmt: skip
        for name in ("url-rules", "url-model", "url-rules+url-model"):
            row = model[name]
            print(
                f"{name + ' (test sites)':<34} {row['matches']:>8} {row['correct']:>8} {row['precision']:>10.3f} {row['recall']:>8.3f}"
            )
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
