"""Main-text extraction quality: our extract stage next to bare ``trafilatura.extract`` with its defaults,
on all pages and cross-validated.

Two gold formats (see ../shared/eval/README.md), recognised from the folder's contents:

- ``ground-truth.json`` + ``html/<sha256>.html.gz`` (scrapinghub article-extraction-benchmark): the
  benchmark's own metric, re-implemented: token 4-gram shingles (tokens = ``\\w+`` runs) counted as
  multisets; per document tp/fp/fn normalised to sum 1; precision averaged over documents with any
  prediction or gold shingles, recall likewise; F1 from the two averages (``metric: shingle4``).
- ``evaldata.json`` + ``html/<file>.gz`` (trafilatura's evaluation set): whitespace-normalised
  substring matching of snippets; a ``with`` snippet found is a true positive, missing a false
  negative; a ``without`` snippet found is a false positive (``metric: snippets``), summed over pages.

"Ours" is the whole per-record path of the extract stage (:class:`bitextflow.extract.DocumentBuilder`:
binary sniffing, charset choice, trafilatura, boilerplate flagging, ftfy, normalisation): its
main-content paragraphs (not the title, not boilerplate), one per line. "trafilatura" is
``trafilatura.extract(html_bytes)`` with every default. The all-pages figures of "ours" use the
project's default ``ExtractConfig``.

Cross-validation: our choices on top of trafilatura (:data:`GRID`: ``extract.extraction_focus`` and
``extract.max_link_density``) are chosen on training folds and scored on the held-out fold. The pages
of every selection set (``--data`` and ``--select-with``, by default both gold sets) are dealt into
``--folds`` folds with a fixed ``--seed``; fold i of the cross-validation holds out fold i of every set.
On the other folds the choice is the one whose smallest F1 gain over bare trafilatura across the sets
is largest (maximin: the goal is never to fall below trafilatura on any kind of page, so the worst set
decides; then the mean gain, then the earlier in :data:`GRID`); its output on the held-out pages is
pooled over folds into the ``cross_validated`` figure (each page scored by a choice made without it).
The choice most folds make is the one the project's defaults must equal
(``selection.default_is_cross_validated_choice``); the choice made on all pages is printed beside it
for comparison only.

Usage, from the project root::

    .venv/bin/python bench/extraction.py [--json] [--data ../shared/eval/scrapinghub_article_extraction]
        [--select-with DIR ...] [--folds 5] [--seed 0] [--limit N]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import logging
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from statistics import mean

import trafilatura

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract import DocumentBuilder, ExtractedPage, Paragraph, WarcResponse
from bitextflow.extract.structure import flag_link_dense

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = ROOT.parent / "shared" / "eval"
DEFAULT_DATA = EVAL_DIR / "scrapinghub_article_extraction"
SELECTION_SETS = (DEFAULT_DATA, EVAL_DIR / "trafilatura_eval")
_TOKEN = re.compile(r"\w+", re.UNICODE)


# -- metrics ----------------------------------------------------------------------------------------
def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i : i + n])


def shingle_counts(gold: str, predicted: str) -> tuple[float, float, float]:
    """(tp, fp, fn) over 4-gram shingle multisets, normalised to sum to 1 (the benchmark's definition)."""
    truth, pred = shingles(gold), shingles(predicted)
    tp = sum((truth & pred).values())
    fp = sum((pred - truth).values())
    fn = sum((truth - pred).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def _precision(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fp == 0 else tp / (tp + fp)


def _recall(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fn == 0 else tp / (tp + fn)


def shingle_metrics(per_document: Sequence[tuple[float, float, float]]) -> dict[str, float]:
    precision = mean([_precision(*c) for c in per_document if c[0] + c[1] > 0] or [0.0])
    recall = mean([_recall(*c) for c in per_document if c[0] + c[2] > 0] or [0.0])
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _squash(text: str) -> str:
    return " ".join(text.split())


def snippet_counts(predicted: str, with_: Sequence[str], without: Sequence[str]) -> tuple[int, int, int]:
    text = _squash(predicted)
    tp = sum(1 for s in with_ if _squash(s) in text)
    fp = sum(1 for s in without if _squash(s) in text)
    return tp, fp, len(with_) - tp


def snippet_metrics(per_document: Sequence[tuple[int, int, int]]) -> dict[str, float]:
    tp, fp, fn = (sum(c[i] for c in per_document) for i in range(3))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


# -- extractors -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Choice:
    """One setting of our extraction choices on top of trafilatura (``ExtractConfig`` fields)."""

    focus: str
    max_link_density: float | None

    @classmethod
    def of(cls, config: ExtractConfig) -> Choice:
        return cls(config.extraction_focus, config.max_link_density)

    def label(self) -> str:
        return f"focus={self.focus} max_link_density={self.max_link_density}"


# Every choice cross-validation picks from; ties go to the earlier: the link-density filter off first,
# then the looser thresholds (fewer paragraphs flagged), each with trafilatura's three focus settings.
FOCUSES = ("recall", "balanced", "precision")
MAX_LINK_DENSITY = (None, 0.9, 0.8, 0.7, 0.6, 0.5)
GRID = [Choice(f, d) for d in MAX_LINK_DENSITY for f in FOCUSES]


def _response(item: dict) -> WarcResponse:
    return WarcResponse(url=item["url"], body=item["html"], status=200, mime="text/html", http_charset=None, record_id="",
                        offset=0, date="")  # fmt: skip


def ours(items: Sequence[dict], config: ExtractConfig) -> list[list[Paragraph] | None]:
    """The paragraphs of each page's document (None: no document) made with ``config``."""
    builder = DocumentBuilder(config)
    documents = (builder.build(_response(item), StageCounts("bench")) for item in items)
    return [document.paragraphs if document is not None else None for document in documents]


def main_text(paragraphs: list[Paragraph] | None, max_link_density: float | None) -> str:
    """The main text of a document made without the link-density filter, as the filter at ``max_link_density``
    would leave it: the stage's own :func:`flag_link_dense` on a copy (it flags after everything that
    changes text, so only the flags differ). A document left without main text is one the stage drops."""
    if paragraphs is None:
        return ""
    flagged = [dataclasses.replace(paragraph) for paragraph in paragraphs]
    flag_link_dense(flagged, max_link_density)
    return ExtractedPage(url="", warc_offset=0, warc_record_id="", paragraphs=flagged).main_text


def grid_texts(items: Sequence[dict]) -> dict[Choice, list[str]]:
    """Main text of every page for every choice of :data:`GRID`: one stage run per focus."""
    texts: dict[Choice, list[str]] = {}
    for focus in FOCUSES:
        documents = ours(items, ExtractConfig(extraction_focus=focus, max_link_density=None))
        for max_link_density in MAX_LINK_DENSITY:
            texts[Choice(focus, max_link_density)] = [main_text(d, max_link_density) for d in documents]
    return texts


def bare_trafilatura(html: bytes) -> str:
    return trafilatura.extract(html) or ""


# -- data -------------------------------------------------------------------------------------------
def load(data: Path) -> tuple[str, list[dict]]:
    """('shingle4' | 'snippets', items with html bytes and gold)."""
    if (data / "ground-truth.json").is_file():
        truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
        items = [
            {"id": key, "url": value.get("url", ""), "html": gzip.decompress((data / "html" / f"{key}.html.gz").read_bytes()),
             "gold": value.get("articleBody", "")}
            for key, value in sorted(truth.items()) if (data / "html" / f"{key}.html.gz").is_file()
        ]  # fmt: skip
        return "shingle4", items
    if (data / "evaldata.json").is_file():
        evaldata = json.loads((data / "evaldata.json").read_text(encoding="utf-8"))
        items = []
        for url, value in sorted(evaldata.items()):
            path = data / "html" / f"{value['file']}.gz"
            if not path.is_file():
                path = data / "html" / value["file"]
            if not path.is_file():
                continue
            raw = path.read_bytes()
            items.append({"id": value["file"], "url": url, "html": gzip.decompress(raw) if path.suffix == ".gz" else raw,
                          "with": value.get("with", []), "without": value.get("without", [])})  # fmt: skip
        return "snippets", items
    raise FileNotFoundError(f"{data}: neither ground-truth.json (scrapinghub format) nor evaldata.json (trafilatura format)")


# -- scoring and cross-validation -------------------------------------------------------------------
@dataclasses.dataclass
class GoldSet:
    """One gold folder: its metric, pages, and per-page counts of bare trafilatura and of every choice."""

    name: str
    metric: str
    items: list[dict]
    trafilatura: list[tuple] = dataclasses.field(default_factory=list)
    choices: dict[Choice, list[tuple]] = dataclasses.field(default_factory=dict)

    def counts(self, text: str, item: dict) -> tuple:
        if self.metric == "shingle4":
            return shingle_counts(item["gold"], text)
        return snippet_counts(text, item["with"], item["without"])

    def score(self, per_page: Sequence[tuple], pages: Sequence[int] | None = None) -> dict[str, float]:
        chosen = per_page if pages is None else [per_page[i] for i in pages]
        return shingle_metrics(chosen) if self.metric == "shingle4" else snippet_metrics(chosen)


def folds(pages: int, k: int, seed: int) -> list[int]:
    """The fold of each page: pages shuffled with ``seed``, then dealt round-robin into ``k`` folds."""
    order = list(range(pages))
    random.Random(seed).shuffle(order)
    fold = [0] * pages
    for rank, page in enumerate(order):
        fold[page] = rank % k
    return fold


def merit(sets: Sequence[GoldSet], pages: dict[str, list[int]], choice: Choice) -> tuple[float, float]:
    """(smallest, mean) F1 gain of ``choice`` over bare trafilatura across ``sets``, on ``pages`` of each."""
    gains = [
        gold.score(gold.choices[choice], pages[gold.name])["f1"] - gold.score(gold.trafilatura, pages[gold.name])["f1"]
        for gold in sets
    ]
    return min(gains), mean(gains)


def select(sets: Sequence[GoldSet], pages: dict[str, list[int]]) -> Choice:
    """The choice whose smallest F1 gain over bare trafilatura across ``sets`` (on ``pages``) is largest, then
    the one with the largest mean gain; ties go to the earlier in :data:`GRID`. Maximin over the sets, as
    model selection for the worst group (Sagawa et al., 2020, "Distributionally robust neural networks"):
    a choice that wins much on one kind of page and loses a little on another is not taken."""
    return max(GRID, key=lambda choice: merit(sets, pages, choice))  # max keeps the first of equals


def cross_validate(sets: Sequence[GoldSet], k: int, seed: int) -> dict:
    """Choices made on k-1 folds of every set, scored on the held-out fold; pooled and per-fold figures."""
    fold_of = {gold.name: folds(len(gold.items), k, seed) for gold in sets}
    held_out: dict[str, list[tuple]] = {gold.name: [()] * len(gold.items) for gold in sets}
    chosen, per_fold = [], []
    for fold in range(k):
        train = {name: [i for i, f in enumerate(of) if f != fold] for name, of in fold_of.items()}
        test = {name: [i for i, f in enumerate(of) if f == fold] for name, of in fold_of.items()}
        choice = select(sets, train)
        chosen.append(choice)
        figures = {}
        for gold in sets:
            for page in test[gold.name]:
                held_out[gold.name][page] = gold.choices[choice][page]
            figures[gold.name] = {
                "pages": len(test[gold.name]),
                "ours": round(gold.score(gold.choices[choice], test[gold.name])["f1"], 4),
                "trafilatura": round(gold.score(gold.trafilatura, test[gold.name])["f1"], 4),
            }
        per_fold.append({"fold": fold, "choice": dataclasses.asdict(choice), "sets": figures})
    votes = Counter(chosen)
    majority = max(GRID, key=lambda choice: votes[choice])  # ties: the earlier in GRID
    return {
        "sets": {
            gold.name: {
                "ours": _rounded(gold.score(held_out[gold.name])),
                "trafilatura": _rounded(gold.score(gold.trafilatura)),
                "folds": [{"fold": f["fold"], **f["sets"][gold.name]} for f in per_fold],
                "folds_below_trafilatura": sum(f["sets"][gold.name]["ours"] < f["sets"][gold.name]["trafilatura"] for f in per_fold),
            }
            for gold in sets
        },
        "folds": per_fold,
        "choice": majority,
        "votes": votes[majority],
    }  # fmt: skip


def _rounded(figures: dict) -> dict:
    return {key: round(value, 4) if isinstance(value, float) else value for key, value in figures.items()}


def _gold_set(data: Path, limit: int) -> GoldSet:
    metric, items = load(data)
    return GoldSet(data.name, metric, items[:limit] if limit else items)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"gold folder reported (default {DEFAULT_DATA})")
    parser.add_argument("--select-with", type=Path, nargs="*", default=list(SELECTION_SETS),
                        help="other gold folders the cross-validated choice is made on with --data (default: both gold sets)")  # fmt: skip
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deal into folds (default 0)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages of each set (0: all)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    folders = [args.data] + [d for d in args.select_with if d.resolve() != args.data.resolve()]
    try:
        sets = [_gold_set(folder, args.limit) for folder in folders]
    except (FileNotFoundError, NotADirectoryError) as exc:
        print(f"extraction: gold data not found: {exc}", file=sys.stderr)
        return 2
    if args.folds < 2 or any(len(gold.items) < args.folds for gold in sets):
        print(f"extraction: --folds {args.folds} needs at least 2 folds and as many pages in every set", file=sys.stderr)
        return 2
    reported, default = sets[0], ExtractConfig()
    started = time.perf_counter()
    default_texts = [main_text(d, None) for d in ours(reported.items, default)]
    seconds = {"ours": time.perf_counter() - started}
    for gold in sets:
        started = time.perf_counter()
        gold.trafilatura = [gold.counts(bare_trafilatura(item["html"]), item) for item in gold.items]
        if gold is reported:
            seconds["trafilatura"] = time.perf_counter() - started
        texts = grid_texts(gold.items)
        gold.choices = {
            choice: [gold.counts(t, item) for t, item in zip(texts[choice], gold.items, strict=True)] for choice in GRID
        }
        if gold is reported and Choice.of(default) in texts and texts[Choice.of(default)] != default_texts:
            raise RuntimeError("the grid's text for the default choice differs from the stage's own: main_text() no longer "
                               "reproduces the stage (does flag_link_dense still run last?)")  # fmt: skip
    results = {
        "ours": reported.score([reported.counts(t, item) for t, item in zip(default_texts, reported.items, strict=True)]),
        "trafilatura": reported.score(reported.trafilatura),
    }
    cv = cross_validate(sets, args.folds, args.seed)
    on_all_pages = select(sets, {gold.name: list(range(len(gold.items))) for gold in sets})
    _print_tables(reported, results, seconds, sets, cv, default, on_all_pages)
    summary = {
        "metric": reported.metric,
        "documents": len(reported.items),
        "data": str(args.data),
        "config": dataclasses.asdict(Choice.of(default)),
        **{name: _rounded(m) for name, m in results.items()},
        "cross_validated": cv["sets"][reported.name],
        "cross_validated_sets": cv["sets"],
        "selection": {
            "folds": args.folds, "seed": args.seed, "sets": [gold.name for gold in sets],
            "fold_choices": [f["choice"] for f in cv["folds"]],
            "cross_validated_choice": dataclasses.asdict(cv["choice"]), "votes": cv["votes"],
            "default_is_cross_validated_choice": Choice.of(default) == cv["choice"],
            "all_pages_choice": dataclasses.asdict(on_all_pages),
        },
        "grid_f1": {choice.label(): {gold.name: round(gold.score(gold.choices[choice])["f1"], 4) for gold in sets} for choice in GRID},
        "pages_per_s": {name: round(len(reported.items) / s, 2) for name, s in seconds.items()},
    }  # fmt: skip
    if args.json:
        print(json.dumps(summary))
    return 0


def _print_tables(reported, results, seconds, sets, cv, default, on_all_pages) -> None:
    print(f"{reported.name} ({len(reported.items)} pages), metric {reported.metric}; ours: {Choice.of(default).label()}")
    print(f"{'extractor':<12} {'precision':>9} {'recall':>7} {'F1':>6} {'pages/s':>8}")
    for name, m in results.items():
        print(
            f"{name:<12} {m['precision']:>9.3f} {m['recall']:>7.3f} {m['f1']:>6.3f} {len(reported.items) / seconds[name]:>8.1f}"
        )
    print(f"\ncross-validated ({len(cv['folds'])} folds), choice made on the other folds, F1 ours / trafilatura:")
    for fold in cv["folds"]:
        figures = "  ".join(f"{name} {f['ours']:.4f} / {f['trafilatura']:.4f}" for name, f in fold["sets"].items())
        print(f"fold {fold['fold']}: {figures}  [{Choice(**fold['choice']).label()}]")
    for name, figures in cv["sets"].items():
        print(f"pooled {name}: ours {figures['ours']['f1']:.4f}, trafilatura {figures['trafilatura']['f1']:.4f}, "
              f"folds below trafilatura: {figures['folds_below_trafilatura']}")  # fmt: skip
    print(f"cross-validated choice ({cv['votes']} of {len(cv['folds'])} folds): {cv['choice'].label()}"
          f"{'' if cv['choice'] == Choice.of(default) else '  (NOT the default configuration)'}")  # fmt: skip
    print(f"choice on all pages (for comparison only): {on_all_pages.label()}")
    print("\nall-pages F1 of every choice, ranked as the selection ranks them on all pages:")
    all_pages = {gold.name: list(range(len(gold.items))) for gold in sets}
    for choice in sorted(GRID, key=lambda c: merit(sets, all_pages, c), reverse=True):
        print("  ".join(f"{gold.name} {gold.score(gold.choices[choice])['f1']:.4f}" for gold in sets), choice.label())


if __name__ == "__main__":
    sys.exit(main())
