"""Sentence-alignment quality and speed on public gold data.

Runs every sentence aligner we have over the Bleualign German-French gold (Text+Berg; the test files
of the Vecalign paper) and scores it with :mod:`bitextflow.align.evaluation`: strict and lax
precision, recall and F1 over alignment links, micro-averaged over the files, as Vecalign's
``score.py`` defines them. Speed is aligned output beads (every bead the aligner returns, null beads
included) per wall second of alignment alone (files are read beforehand), the best of three runs over
the whole set.

Aligners: ``gale-church`` (length only), ``hunalign-dict`` (dictionary + length, Hunalign-style,
with the Debian dictionary of the pair: de-fr from FreeDict for Bleualign, hu-en for dtm; built into
the cache on first use) and ``hunalign-nodict`` (the same with identical tokens only, to show what
the dictionary adds). Dictionary loading is outside the timing, as in the pipeline (once per task).
``vecalign-e5`` is the embedding aligner (:mod:`bitextflow.align.embedding`, Vecalign-style) with the
default multilingual-e5-small encoder, loaded once outside the timing; its time includes encoding the
overlaps, and the report splits it into encoding and search seconds. Encoding dominates and is slow
on CPU, so it runs ``--embedding-runs`` times (default 1); ``--skip-embedding`` leaves it out.
``hybrid`` (:mod:`bitextflow.align.hybrid`) is Vecalign's search over static embeddings distilled
from that encoder (:mod:`bitextflow.models.static`, loaded once outside the timing; its time includes
tokenising and embedding every sentence) plus the data set's dictionary and length;
``hybrid-nodict`` is the same without the dictionary (identical tokens only).

A second language pair, the hunalign English-Hungarian hand alignment ``dtm``, is scored by beads:
consecutive rungs of ``hand.ladder`` (``hu_index en_index``) delimit one gold bead, and a predicted
bead counts when it is exactly a gold bead (precision over predicted beads, recall over gold beads).

Usage, from the project root::

    .venv/bin/python bench/sentence_alignment.py [--json] [--data DIR] [--include-dev]
                                                 [--hunalign-data DIR] [--runs N]
                                                 [--embedding-runs N] [--skip-embedding]
                                                 [--static-model DIR]

With ``--json`` the last line of output is one JSON object (see ../shared/BENCH.md).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bitextflow.align.dictionary import BilingualDictionary, load_dictionary
from bitextflow.align.embedding import align_sentences_embedding
from bitextflow.align.evaluation import Link, read_links, score_alignments
from bitextflow.align.hybrid import TokenEmbeddings, align_sentences_hybrid
from bitextflow.align.lexical import align_sentences_lexical
from bitextflow.align.sentences import Bead, align_sentences
from bitextflow.models.static import StaticEmbeddings

EVAL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "eval"
DEFAULT_DATA = EVAL_DIR / "bleualign_defr_gold"
DEFAULT_HUNALIGN = EVAL_DIR / "hunalign_handaligns_en_hu" / "dtm"

#: A sentence aligner as the benchmark runs it: two sentence lists -> links.
Aligner = Callable[[Sequence[str], Sequence[str]], list[Link]]


def _links(beads: list[Bead]) -> list[Link]:
    return [(bead.src, bead.tgt) for bead in beads]


class TimedEncoder:
    """Wraps a sentence encoder and adds up the seconds spent in ``encode``."""

    def __init__(self, encoder: object) -> None:
        self.encoder = encoder
        self.seconds = 0.0
        self.texts = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = self.encoder.encode(texts)  # type: ignore[attr-defined]
        self.seconds += time.perf_counter() - started
        self.texts += len(texts)
        return vectors


def make_aligners(
    dictionary: BilingualDictionary | None, encoder: TimedEncoder | None = None, static: TokenEmbeddings | None = None
) -> dict[str, Aligner]:
    """Every sentence aligner we have, ``hunalign-dict`` and ``hybrid`` with the data set's dictionary."""
    aligners: dict[str, Aligner] = {"gale-church": lambda src, tgt: _links(align_sentences(src, tgt))}
    if dictionary is not None:
        aligners["hunalign-dict"] = lambda src, tgt: _links(align_sentences_lexical(src, tgt, dictionary))
    aligners["hunalign-nodict"] = lambda src, tgt: _links(align_sentences_lexical(src, tgt, None))
    if encoder is not None:
        aligners["vecalign-e5"] = lambda src, tgt: _links(align_sentences_embedding(src, tgt, encoder))
    if static is not None:
        if dictionary is not None:
            aligners["hybrid"] = lambda src, tgt: _links(align_sentences_hybrid(src, tgt, static, dictionary))
        aligners["hybrid-nodict"] = lambda src, tgt: _links(align_sentences_hybrid(src, tgt, static, None))
    return aligners


#: Published figures on the same gold data (../shared/eval/README.md; Thompson and Koehn, 2019,
#: "Vecalign: Improved Sentence Alignment in Linear Time and Space"). They cover test0-6, of which
#: test0-3 are shipped here, so they sit beside ours as a reference, not as a like-for-like score.
PUBLISHED = {
    "vecalign-laser": {
        "strict": {"f1": 0.902},
        "lax": {"f1": 0.986},
        "test_sets": "test0-6",
        "source": "Thompson and Koehn (2019), via ../shared/eval/README.md",
    }
}

PARAGRAPH_MARKER = "<p>"


class DataMissing(Exception):
    """Gold data is not where it was expected; the message is shown as is."""


@dataclass
class DocumentPair:
    name: str
    src: list[str]
    tgt: list[str]
    gold: list[Link]


def _lines(path: Path, encoding: str = "utf-8") -> list[str]:
    return path.read_text(encoding=encoding).splitlines()


def load_bleualign(data: Path, include_dev: bool) -> list[DocumentPair]:
    """Every ``X.de``/``X.fr``/``X.defr`` triple in ``data`` (``dev`` only with ``include_dev``)."""
    if not data.is_dir():
        raise DataMissing(f"gold data not found: {data} is not a directory (expected X.de, X.fr, X.defr files)")
    documents = []
    for gold_path in sorted(data.glob("*.defr")):
        name = gold_path.name.removesuffix(".defr")
        if name == "dev" and not include_dev:
            continue
        de, fr = data / f"{name}.de", data / f"{name}.fr"
        if not (de.is_file() and fr.is_file()):
            continue
        documents.append(DocumentPair(name, _lines(de), _lines(fr), read_links(gold_path)))
    if not documents:
        raise DataMissing(f"gold data not found: no X.de/X.fr/X.defr triples in {data}")
    return documents


def load_hunalign(data: Path) -> tuple[DocumentPair, dict[str, int]]:
    """The hunalign hand alignment as (hu sentences, en sentences, gold beads in line indices).

    ``hand.ladder`` indexes lines of ``hu.sen``/``en.sen`` as they are in the files, ``<p>`` lines
    included (the last rung is the two line counts). The aligner gets the sentences without the
    ``<p>`` lines and its indices are mapped back to line numbers; ``<p>`` lines are then left out
    of both gold and predicted beads, so paragraph markers are neither credited nor penalised.
    Returns the pair (indices still in line numbers, ``<p>`` included in ``src``/``tgt``) and the
    number of ``<p>`` lines per side.
    """
    files = [data / name for name in ("hu.sen", "en.sen", "hand.ladder")]
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise DataMissing(f"hunalign gold data not found: {', '.join(missing)} missing")
    hu, en = _lines(files[0], "iso-8859-2"), _lines(files[1], "iso-8859-2")
    rungs = [tuple(int(x) for x in line.split()) for line in _lines(files[2]) if line.strip()]
    if rungs[0] != (0, 0):
        rungs.insert(0, (0, 0))
    if rungs[-1] != (len(hu), len(en)):
        raise DataMissing(
            f"hand.ladder ends at rung {rungs[-1]}, not at the line counts ({len(hu)}, {len(en)}): unexpected format"
        )
    gold = [(tuple(range(h0, h1)), tuple(range(e0, e1))) for (h0, e0), (h1, e1) in zip(rungs, rungs[1:], strict=False)]
    markers = {
        "hu": sum(line.strip() == PARAGRAPH_MARKER for line in hu),
        "en": sum(line.strip() == PARAGRAPH_MARKER for line in en),
    }
    return DocumentPair("dtm", hu, en, gold), markers


def _without_markers(lines: list[str]) -> tuple[list[str], list[int]]:
    kept = [i for i, line in enumerate(lines) if line.strip() != PARAGRAPH_MARKER]
    return [lines[i] for i in kept], kept


def _drop_indices(links: list[Link], drop_src: set[int], drop_tgt: set[int]) -> list[Link]:
    cleaned = [(tuple(i for i in src if i not in drop_src), tuple(j for j in tgt if j not in drop_tgt)) for src, tgt in links]
    return [link for link in cleaned if link[0] or link[1]]


def score_hunalign(aligner: Aligner, document: DocumentPair) -> dict[str, float | int]:
    src, src_index = _without_markers(document.src)
    tgt, tgt_index = _without_markers(document.tgt)
    predicted = [(tuple(src_index[i] for i in s), tuple(tgt_index[j] for j in t)) for s, t in aligner(src, tgt)]
    drop_src = set(range(len(document.src))) - set(src_index)
    drop_tgt = set(range(len(document.tgt))) - set(tgt_index)
    gold = _drop_indices(document.gold, drop_src, drop_tgt)
    predicted = _drop_indices(predicted, drop_src, drop_tgt)
    correct = len(set(gold) & set(predicted))
    precision = correct / len(predicted) if predicted else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    links = score_alignments([gold], [predicted])
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "gold_beads": len(gold),
        "predicted_beads": len(predicted),
        "correct_beads": correct,
        # The Bleualign metric on the same data, for comparison across the two sets.
        "strict_f1": links.f1_strict,
        "lax_f1": links.f1_lax,
    }


def run_aligner(aligner: Aligner, documents: list[DocumentPair], runs: int) -> tuple[list[list[Link]], float, list[float]]:
    """Predicted links per document and the best wall time (seconds) of ``runs`` passes over all documents."""
    times = []
    predicted: list[list[Link]] = []
    for _ in range(runs):
        started = time.perf_counter()
        predicted = [aligner(doc.src, doc.tgt) for doc in documents]
        times.append(time.perf_counter() - started)
    return predicted, min(times), times


def _prf(precision: float, recall: float, f1: float) -> dict[str, float]:
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def _described(dictionary: BilingualDictionary | None) -> dict[str, object] | None:
    """Size and packages of a dictionary for the JSON report (None: the pair has none)."""
    if dictionary is None:
        return None
    packages = [f"{p['name']} {p['version']}" for p in dictionary.manifest["packages"]]
    return {"lemma_pairs": len(dictionary), "packages": packages}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"Bleualign-format gold folder (default {DEFAULT_DATA})")
    parser.add_argument("--include-dev", action="store_true", help="also align and score dev.de/dev.fr")
    parser.add_argument(
        "--hunalign-data",
        type=Path,
        default=None,
        help=f"hunalign handalign folder (default {DEFAULT_HUNALIGN}; skipped if absent)",
    )
    parser.add_argument(
        "--languages", default="de-fr", help="source-target languages of --data, for the dictionary (default de-fr)"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed passes per aligner; the best is reported (default 3)")
    parser.add_argument(
        "--embedding-runs", type=int, default=1, help="timed passes of vecalign-e5 (encoding is slow on CPU; default 1)"
    )
    parser.add_argument("--skip-embedding", action="store_true", help="leave out vecalign-e5 (no encoder is loaded)")
    parser.add_argument(
        "--static-model", type=Path, default=None, help="static embedding folder for hybrid (default: the distilled one)"
    )
    args = parser.parse_args(argv)

    try:
        documents = load_bleualign(args.data, args.include_dev)
        hunalign: tuple[DocumentPair, dict[str, int]] | None = None
        hunalign_dir = args.hunalign_data or DEFAULT_HUNALIGN
        if args.hunalign_data is not None or hunalign_dir.is_dir():
            hunalign = load_hunalign(hunalign_dir)
    except DataMissing as error:
        print(f"sentence_alignment: {error}", file=sys.stderr)
        return 2
    if hunalign is None:
        print(f"note: hunalign data not found at {hunalign_dir}; the en-hu set is skipped", file=sys.stderr)

    gold = [doc.gold for doc in documents]
    sentences = sum(len(doc.src) + len(doc.tgt) for doc in documents)
    print(
        f"Bleualign de-fr gold: {args.data} | files: {', '.join(d.name for d in documents)} | "
        f"{sum(len(d.src) for d in documents)} de + {sum(len(d.tgt) for d in documents)} fr sentences, "
        f"{sum(len(g) for g in gold)} gold links"
    )
    result: dict = {
        "data": str(args.data),
        "files": [doc.name for doc in documents],
        "sentences": sentences,
        "gold_links": sum(len(g) for g in gold),
        "runs": args.runs,
        "aligners": {},
        "per_file": {},
        "published": PUBLISHED,
        "hunalign_dtm": {},
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    lang_src, _, lang_tgt = args.languages.partition("-")
    dictionary = load_dictionary(lang_src, lang_tgt)
    result["dictionaries"] = {args.languages: _described(dictionary)}
    encoder: TimedEncoder | None = None
    if not args.skip_embedding:
        from bitextflow.models.encoder import SentenceEncoder

        encoder = TimedEncoder(SentenceEncoder.from_path())
        result["encoder"] = str(encoder.encoder.path)
    static = StaticEmbeddings.from_path(args.static_model)
    result["static_model"] = str(static.path)
    hunalign_aligners = {}
    if hunalign is not None:
        hu_en = load_dictionary("hu", "en")
        result["dictionaries"]["hu-en"] = _described(hu_en)
        hunalign_aligners = make_aligners(hu_en, encoder, static)
    for name, aligner in make_aligners(dictionary, encoder, static).items():
        runs = args.embedding_runs if name == "vecalign-e5" else args.runs
        if encoder is not None:
            encoder.seconds, encoder.texts = 0.0, 0
        predicted, best, times = run_aligner(aligner, documents, runs)
        scores = score_alignments(gold, predicted)
        beads = sum(len(p) for p in predicted)
        result["aligners"][name] = {
            "strict": _prf(scores.precision_strict, scores.recall_strict, scores.f1_strict),
            "lax": _prf(scores.precision_lax, scores.recall_lax, scores.f1_lax),
            "pairs_per_s": round(beads / best, 1) if best > 0 else float("inf"),
            "beads": beads,
            "sentences_per_s": round(sentences / best, 1) if best > 0 else float("inf"),
            "best_seconds": round(best, 4),
            "all_seconds": [round(t, 4) for t in times],
        }
        if name == "vecalign-e5" and encoder is not None:
            # Averages over the runs: encoding the overlaps vs everything else (costs and search).
            encode_s = encoder.seconds / runs
            result["aligners"][name]["encode_seconds"] = round(encode_s, 4)
            result["aligners"][name]["search_seconds"] = round(sum(times) / runs - encode_s, 4)
            result["aligners"][name]["texts_encoded"] = encoder.texts // runs
        result["per_file"][name] = {}
        for doc, links in zip(documents, predicted, strict=True):
            one = score_alignments([doc.gold], [links])
            result["per_file"][name][doc.name] = {"strict_f1": round(one.f1_strict, 4), "lax_f1": round(one.f1_lax, 4)}
        if hunalign is not None:
            scored = score_hunalign(hunalign_aligners[name], hunalign[0])
            result["hunalign_dtm"][name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in scored.items()}
    if hunalign is not None:
        result["hunalign_dtm_paragraph_markers"] = hunalign[1]
    else:
        result["hunalign_dtm"] = None

    # -- table ------------------------------------------------------------------------------------
    header = f"{'aligner':<32} {'strict P':>8} {'strict R':>8} {'strict F1':>9} {'lax P':>7} {'lax R':>7} {'lax F1':>7} {'pairs/s':>10}"
    print()
    print(header)
    print("-" * len(header))
    for name, row in result["aligners"].items():
        s, lx = row["strict"], row["lax"]
        print(
            f"{name:<32} {s['precision']:>8.3f} {s['recall']:>8.3f} {s['f1']:>9.3f} "
            f"{lx['precision']:>7.3f} {lx['recall']:>7.3f} {lx['f1']:>7.3f} {row['pairs_per_s']:>10,.0f}"
        )
    for name, row in PUBLISHED.items():
        label = f"{name} (pub., {row['test_sets']})"
        print(f"{label:<32} {'':>8} {'':>8} {row['strict']['f1']:>9.3f} {'':>7} {'':>7} {row['lax']['f1']:>7.3f} {'':>10}")
    print()
    print("Per file (strict F1 / lax F1):")
    for name, files in result["per_file"].items():
        print(f"  {name}: " + ", ".join(f"{f} {v['strict_f1']:.3f}/{v['lax_f1']:.3f}" for f, v in files.items()))
    for name, row in result["aligners"].items():
        print(
            f"  {name}: {row['beads']} beads in {row['best_seconds']:.4f} s (best of {len(row['all_seconds'])}: "
            + ", ".join(f"{t:.4f}" for t in row["all_seconds"])
            + ")"
            + (
                f"; encoding {row['encode_seconds']:.2f} s ({row['texts_encoded']} overlap texts), search {row['search_seconds']:.2f} s"
                if "encode_seconds" in row
                else ""
            )
        )
    if hunalign is not None:
        doc, markers = hunalign
        print()
        print(
            f"hunalign en-hu dtm: {hunalign_dir} | {len(doc.src)} hu + {len(doc.tgt)} en lines "
            f"(<p> lines: hu {markers['hu']}, en {markers['en']}), {len(doc.gold)} gold beads"
        )
        header = f"{'aligner':<32} {'bead P':>8} {'bead R':>8} {'bead F1':>8} {'correct':>8} {'strict F1':>9} {'lax F1':>7}"
        print(header)
        print("-" * len(header))
        for name, row in result["hunalign_dtm"].items():
            print(
                f"{name:<32} {row['precision']:>8.3f} {row['recall']:>8.3f} {row['f1']:>8.3f} "
                f"{row['correct_beads']:>4}/{row['predicted_beads']:<3} {row['strict_f1']:>9.3f} {row['lax_f1']:>7.3f}"
            )
    if args.json:
        print(json.dumps(result, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
