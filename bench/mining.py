"""Bitext-mining error rate on Tatoeba for each pair scorer we have: embedding cosine and bicleaner-ai.

xsim-style (Artetxe and Schwenk, 2019, TACL, "Massively Multilingual Sentence Embeddings for Zero-Shot
Cross-Lingual Transfer and Beyond"): for every source sentence, the target sentence the scorer rates
highest; the error rate is the share that is not its own translation. Both directions per language
(``xxx->eng`` and ``eng->xxx``); the headline per language is their mean, as in the paper.

- ``embedding-cosine``: cosine of :class:`bitextflow.models.SentenceEncoder` embeddings (the converted
  multilingual-e5-small), all 1,000 x 1,000 pairs of each language.
- ``bicleaner-ai``: the score of the bicleaner-ai lite model ``make setup`` trains (en-es only: the
  one language it knows), through the same ``score_pairs.py`` the pipeline runs (bifixer first).
  All-pairs scoring is quadratic: it scores the first ``--bicleaner-sentences`` (100) sentences against
  each other (10,000 pairs), so its rate is over 100 candidates, not 1,000, and is easier. The cosine
  over the same subset is given beside it (``embedding-cosine@subset``) for a fair comparison.
- ``documentation_separation``: both scorers on ``--separation-pairs`` (300) en-es pairs of the documentation
  pages held out of the bicleaner model's training (the demo's kind of text) against the same English
  sentences paired with another sampled pair's Spanish side (``shuffled``) and with the Spanish side of the
  sentence next to them on their page (``neighbours``, the hard negatives): ROC AUC, mean scores, and for
  bicleaner-ai the share of each kind kept at the default threshold 0.5 (``mean_shuffled`` and
  ``kept_shuffled`` name the negatives of either kind).
- ``laser_published``: LASER's error rates on these sets from the paper's Tatoeba table. The table
  could not be read from the sources available here, so the values are null (never estimated).

Usage, from the project root::

    .venv/bin/python bench/mining.py [--json] [--data ../shared/eval/tatoeba] [--languages spa,fra,...]
                                     [--bicleaner-sentences 100] [--no-bicleaner] [--batch-size 64]
                                     [--separation-pairs 300]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bitextflow.errors import BitextflowError

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "tatoeba"
# Tatoeba language code -> the bicleaner pair it needs; languages absent here have no bicleaner model.
BICLEANER_PAIRS = {"spa": "en-es"}
THRESHOLD = 0.5  # score.bicleaner_threshold's default: the share of each kind of pair it keeps
NEGATIVES = ("shuffled", "neighbours")  # the non-translations of the held-out sample (training_data.HeldOutSample)
LASER_PUBLISHED: dict[str, float | None] = {}  # filled from the paper's table when a reader has it; null otherwise


def read_language(data: Path, lang: str) -> tuple[list[str], list[str]]:
    """(foreign, English) lines of ``tatoeba.<lang>-eng``; line i of one translates line i of the other."""
    foreign = (data / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").splitlines()
    english = (data / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").splitlines()
    if len(foreign) != len(english):
        raise BitextflowError(f"tatoeba.{lang}-eng: {len(foreign)} {lang} lines but {len(english)} English lines")
    return foreign, english


def error_rates(scores: np.ndarray) -> dict[str, float]:
    """``scores[i, j]``: foreign i against English j. Errors of the best match per row and per column."""
    gold = np.arange(scores.shape[0])
    to_eng = float((scores.argmax(axis=1) != gold).mean())
    from_eng = float((scores.argmax(axis=0) != gold).mean())
    return {"to_eng": round(to_eng, 4), "from_eng": round(from_eng, 4), "mean": round((to_eng + from_eng) / 2, 4)}


def bicleaner_scores(foreign: list[str], english: list[str], pair: str) -> np.ndarray:
    """All pairs (English i, foreign j) scored by the bicleaner-ai model of ``pair``, as foreign x English."""
    return score_pairs([(e, f) for f in foreign for e in english], pair).reshape(len(foreign), len(english))


def score_pairs(pairs: list[tuple[str, str]], pair: str) -> np.ndarray:
    """bicleaner-ai scores of ``pairs`` through score_pairs.py (bifixer and hardrules first), as the pipeline scores."""
    from bitextflow.score import bicleaner

    with tempfile.TemporaryDirectory(prefix="bitextflow-mining-") as tmp:
        source, out = Path(tmp) / "pairs.tsv", Path(tmp) / "scored.tsv"
        source.write_text(bicleaner.pairs_tsv(pairs), encoding="utf-8")
        lang_a, lang_b = pair.split("-")
        model = bicleaner.require_available(pair)
        bicleaner.run_scoring(bicleaner.score_arguments(model, lang_a, lang_b, str(source), str(out)))
        rows = bicleaner.read_scores(out.read_text(encoding="utf-8"))
    return np.array([row[3] for row in rows])


def documentation_separation(encoder, size: int, threshold: float) -> dict[str, dict[str, dict[str, float]]]:  # noqa: ANN001 - a SentenceEncoder
    """Both scorers on ``size`` held-out documentation pairs (pages the bicleaner model never saw, the demo's
    kind of text) against the same English sentences each with another sampled pair's Spanish side
    (``shuffled``) and with its page neighbour's (``neighbours``: same topic, the hard negatives)."""
    from bitextflow.score.bicleaner import separation
    from bitextflow.score.training_data import held_out_sample

    sample = held_out_sample("en", "es", size)
    english = encoder.encode([a for a, _ in sample.translations])
    spanish = {kind: encoder.encode([b for _, b in getattr(sample, kind)]) for kind in ("translations", *NEGATIVES)}
    scores = score_pairs(sample.translations + sample.shuffled + sample.neighbours, "en-es")
    cosine_true = (english * spanish["translations"]).sum(axis=1)
    return {
        kind: {
            "embedding-cosine": separation(cosine_true, (english * spanish[kind]).sum(axis=1)),
            "bicleaner-ai": separation(scores[:size], scores[size * (i + 1) : size * (i + 2)], threshold),
        }
        for i, kind in enumerate(NEGATIVES)
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"Tatoeba folder (default {DEFAULT_DATA})")
    parser.add_argument("--languages", default=None, help="comma-separated codes (default: every tatoeba.*-eng pair in --data)")
    parser.add_argument("--bicleaner-sentences", type=int, default=100, help="subset size for bicleaner-ai all-pairs scoring")
    parser.add_argument("--no-bicleaner", action="store_true", help="skip the bicleaner-ai scorer")
    parser.add_argument("--batch-size", type=int, default=64, help="encoder batch size")
    parser.add_argument(
        "--separation-pairs",
        type=int,
        default=300,
        help="held-out en-es documentation pairs for the separation figures (0: skip)",
    )
    args = parser.parse_args(argv)

    languages = (
        args.languages.split(",")
        if args.languages
        else sorted(p.name.split(".")[1][:3] for p in args.data.glob("tatoeba.*-eng.eng"))
    )
    if not languages or not all((args.data / f"tatoeba.{lang}-eng.eng").is_file() for lang in languages):
        print(f"mining: no Tatoeba files for {languages or 'any language'} in {args.data}", file=sys.stderr)
        return 2
    from bitextflow.models import SentenceEncoder

    try:
        encoder = SentenceEncoder.from_path(None)
    except BitextflowError as error:
        print(f"mining: {error}", file=sys.stderr)
        return 2

    directions: dict[str, dict[str, dict[str, float]]] = {
        "embedding-cosine": {},
        "embedding-cosine@subset": {},
        "bicleaner-ai": {},
    }
    seconds: dict[str, float] = {}
    subset = args.bicleaner_sentences
    for lang in languages:
        foreign, english = read_language(args.data, lang)
        started = time.perf_counter()
        cosine = encoder.encode(foreign, batch_size=args.batch_size) @ encoder.encode(english, batch_size=args.batch_size).T
        seconds[f"embedding-cosine/{lang}"] = round(time.perf_counter() - started, 1)
        directions["embedding-cosine"][lang] = error_rates(cosine)
        if args.no_bicleaner or lang not in BICLEANER_PAIRS:
            continue
        directions["embedding-cosine@subset"][lang] = error_rates(cosine[:subset, :subset])
        started = time.perf_counter()
        try:
            scores = bicleaner_scores(foreign[:subset], english[:subset], BICLEANER_PAIRS[lang])
        except BitextflowError as error:
            print(f"mining: bicleaner-ai skipped: {error}", file=sys.stderr)
            continue
        seconds[f"bicleaner-ai/{lang}"] = round(time.perf_counter() - started, 1)
        directions["bicleaner-ai"][lang] = error_rates(scores)

    documentation = {}
    if args.separation_pairs and not args.no_bicleaner and "spa" in languages:
        started = time.perf_counter()
        try:
            documentation = documentation_separation(encoder, args.separation_pairs, THRESHOLD)
        except BitextflowError as error:
            print(f"mining: documentation separation skipped: {error}", file=sys.stderr)
        seconds["documentation-separation"] = round(time.perf_counter() - started, 1)

    result = {
        "scorers": {
            name: {lang: rates["mean"] for lang, rates in by_lang.items()} for name, by_lang in directions.items() if by_lang
        },
        "directions": {name: by_lang for name, by_lang in directions.items() if by_lang},
        "laser_published": {lang: LASER_PUBLISHED.get(lang) for lang in languages},
        "laser_note": "LASER's rates (Artetxe and Schwenk 2019, Tatoeba table) were not readable here; null, not estimated",
        "sentences_per_language": len(read_language(args.data, languages[0])[0]),
        "bicleaner_subset": subset,
        "documentation_separation": documentation,
        "documentation_pairs": args.separation_pairs if documentation else 0,
        "seconds": seconds,
    }
    print(f"{'scorer':<26}" + "".join(f"{lang:>14}" for lang in languages))
    for name, by_lang in result["directions"].items():
        cells = [
            f"{by_lang[lang]['to_eng']:.3f}/{by_lang[lang]['from_eng']:.3f}" if lang in by_lang else "-" for lang in languages
        ]
        print(f"{name:<26}" + "".join(f"{cell:>14}" for cell in cells))
    print("error rate xxx->eng / eng->xxx; bicleaner-ai and embedding-cosine@subset over the first", subset, "sentences")
    for kind, by_scorer in documentation.items():
        for name, figures in by_scorer.items():
            print(
                f"held-out documentation vs {kind}, {name}: " + ", ".join(f"{key} {value:.3f}" for key, value in figures.items())
            )
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
