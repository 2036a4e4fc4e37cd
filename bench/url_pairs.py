"""URL-pair matching on the WMT16 document-alignment gold: recall of the URL rules (and URL model).

For each web site of the gold, the English URLs are matched 1-1 to the French URLs using the URLs
alone (:func:`bitextflow.crawl.urlpairs.match_url_pairs`), and the matches are compared with the gold
pairs. The crawled documents of WMT16 are not available here, so the candidates are the gold URLs only
(no distractor URLs): recall is comparable in spirit, not in setting, with the smart-crawling seed's
figures on the full task (rule baseline 59.91, XLM-R URL-pair model 62.99). ``url-model`` is null
until URL models exist (``--url-models``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bitextflow.crawl.urlpairs import PASSES, match_url_pairs

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "wmt16_docalign_test_gold"


def read_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.rstrip("\n").split("\t")
        if len(fields) >= 2 and fields[0] and fields[1]:
            pairs.append((fields[-2], fields[-1]))
    return pairs


def read_labels(path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """``test.pairs.manually_classified``: (en, fr) -> (URL-visible 1/0, code)."""
    labels = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            if len(fields) == 4:
                labels[fields[2], fields[3]] = (fields[0], fields[1])
    return labels


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"gold folder with test.pairs (default {DEFAULT_DATA})")
    parser.add_argument("--url-models", default=None, help="URL models (none yet: url-model is reported as null)")
    args = parser.parse_args(argv)
    gold_file = args.data / "test.pairs"
    if not gold_file.exists():
        print(f"url_pairs: {gold_file} is absent (the gold data ships in ../shared/eval)", file=sys.stderr)
        return 2
    gold = read_pairs(gold_file)
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
    result["recall"] = {"url-rules": full["recall"], "url-model": None}
    result["precision"] = {"url-rules": full["precision"], "url-model": None}
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
    print("url-model: none (no URL models yet)" if args.url_models is None else f"url-model: {args.url_models} (not loaded)")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
