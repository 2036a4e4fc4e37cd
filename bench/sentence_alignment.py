"""Sentence-alignment quality and speed on public gold data, each aligner's choices cross-validated.

Runs every sentence aligner we have over the Bleualign German-French gold (Text+Berg; the test files
of the Vecalign paper) and scores it with :mod:`bitextflow.align.evaluation`: strict and lax
precision, recall and F1 over alignment links, micro-averaged over the files, as Vecalign's
``score.py`` defines them.

Every aligner's tuned choices (weights, deletion costs, penalties, centring, stem length, overlap
size: the knobs of :data:`SPECS`) are selected on six gold files, Bleualign ``dev`` and test0-3 and
hunalign's en-hu hand alignment ``dtm``, by strict F1 pooled over the files, with a greedy
coordinate-wise search over a few candidate values per knob
(:func:`bitextflow.align.evaluation.select_setting`). Two figures per aligner:

- all files (``aligners``): aligned with the library's defaults, which are the setting selected on
  all six files (``selection.default_is_selected`` says whether they still are); in-sample.
- leave one file out (``leave_one_out``): each file aligned with the setting selected on the five
  others (:func:`bitextflow.align.evaluation.leave_one_file_out`), which estimates what the aligner
  and its selection reach on files they have not seen, as the published Bleualign test4-6 are to us.

Both are scored on the same Bleualign files (test0-3; dev too with ``--include-dev``). Speed is
aligned output beads (every bead the aligner returns, null beads included) per wall second of
alignment alone with the defaults (files are read beforehand), the best of ``--runs`` passes over
those files.

Aligners: ``gale-church`` (length only, the paper's constants: nothing to select), ``hunalign-dict``
(dictionary + length, Hunalign-style, with the Debian dictionary of the pair: de-fr from FreeDict for
Bleualign, hu-en for dtm; built into the cache on first use) and ``hunalign-nodict`` (identical tokens
only, to show what the dictionary adds). Dictionary loading is outside the timing, as in the pipeline
(once per task). ``vecalign-e5`` is the embedding aligner (:mod:`bitextflow.align.embedding`,
Vecalign) with the default multilingual-e5-small encoder, loaded once outside the timing.
``hybrid`` (:mod:`bitextflow.align.hybrid`) is Vecalign's search over static embeddings distilled
from that encoder (:mod:`bitextflow.models.static`; its time includes tokenising and embedding every
sentence) plus the pair's dictionary and length; ``hybrid-nodict`` the same without the dictionary;
``hybrid-e5`` the same search over the encoder's own sentence vectors (each sentence encoded once).
The encoder's vectors are kept by text for the whole run (and in ``--embedding-cache`` across runs),
so the many settings of the selection encode each text once; the speed of ``vecalign-e5`` and
``hybrid-e5`` includes encoding only when ``--embedding-runs`` passes (default 1) are timed with a
fresh encoder: with ``--embedding-runs 0`` their speed is costs and search alone (``encoding_timed``).
``--skip-embedding`` leaves both out.

On the hunalign en-hu hand alignment ``dtm``, besides the link metric, beads are scored as units:
consecutive rungs of ``hand.ladder`` (``hu_index en_index``) delimit one gold bead, and a predicted
bead counts when it is exactly a gold bead (precision over predicted beads, recall over gold beads).

``--time-dictionaries PAIR ...`` also times loading those dictionaries: from their binary form (what
:func:`bitextflow.align.dictionary.load_dictionary` does) against parsing their TSV (what every load
did before the binary form, and what making it costs), and building the aligners' word table.

Usage, from the project root::

    .venv/bin/python bench/sentence_alignment.py [--json] [--data DIR] [--include-dev]
                                                 [--hunalign-data DIR] [--runs N]
                                                 [--embedding-runs N] [--skip-embedding]
                                                 [--embedding-cache DIR] [--static-model DIR]
                                                 [--time-dictionaries PAIR ...]

With ``--json`` the last line of output is one JSON object (see ../shared/BENCH.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import hashlib
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bitextflow.align import embedding, lexical
from bitextflow.align.dictionary import BilingualDictionary, load_dictionary, read_tsv, tsv_path
from bitextflow.align.embedding import Encoder, align_sentences_embedding
from bitextflow.align.evaluation import (
    Link,
    LinkCounts,
    Setting,
    count_links,
    leave_one_file_out,
    pooled,
    read_links,
    select_setting,
)
from bitextflow.align.hybrid import ENCODER_CHOICES, STATIC_CHOICES, HybridChoices, TokenEmbeddings, align_sentences_hybrid
from bitextflow.align.lexical import WordTranslations, align_sentences_lexical
from bitextflow.align.sentences import Bead, align_sentences
from bitextflow.config import ScoreConfig
from bitextflow.models.static import StaticEmbeddings
from bitextflow.score import margin_coverage
from bitextflow.text.lengths import weighted_length

EVAL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "eval"
DEFAULT_DATA = EVAL_DIR / "bleualign_defr_gold"
DEFAULT_HUNALIGN = EVAL_DIR / "hunalign_handaligns_en_hu" / "dtm"

#: A sentence aligner as the benchmark runs it: two sentence lists -> beads.
BeadAligner = Callable[[Sequence[str], Sequence[str]], list[Bead]]


def _links(beads: list[Bead]) -> list[Link]:
    return [(bead.src, bead.tgt) for bead in beads]


class CachedEncoder:
    """A sentence encoder whose vectors are kept by text, in memory and optionally in a folder.

    The selection aligns every file with dozens of settings; without this each would encode the same
    texts again. ``seconds`` and ``texts`` add up the encoding actually done.
    """

    def __init__(self, encoder: Any, folder: Path | None) -> None:
        self.encoder = encoder
        self.vectors: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.texts = 0
        self.file: Path | None = None
        if folder is not None:
            # One file per model: its folder and stamp name it, so another encoder never reads these vectors.
            stamp = "".join(sorted(p.read_text(encoding="utf-8") for p in Path(encoder.path).glob("bitextflow-*.json")))
            key = hashlib.sha256(f"{Path(encoder.path).resolve()}\n{stamp}".encode()).hexdigest()[:16]
            folder.mkdir(parents=True, exist_ok=True)
            self.file = folder / f"vectors-{key}.npz"
            if self.file.is_file():
                with np.load(self.file, allow_pickle=False) as stored:
                    texts = bytes(stored["texts"]).decode("utf-8").split("\0") if stored["texts"].size else []
                    self.vectors = dict(zip(texts, stored["vectors"], strict=True))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in self.vectors]
        if missing:
            started = time.perf_counter()
            self.vectors.update(zip(missing, self.encoder.encode(missing), strict=True))
            self.seconds += time.perf_counter() - started
            self.texts += len(missing)
            self._save()
        return np.stack([self.vectors[text] for text in texts]) if texts else np.zeros((0, self.encoder.dim), np.float32)

    def _save(self) -> None:
        if self.file is None:
            return
        texts = list(self.vectors)
        temporary = self.file.with_suffix(".tmp.npz")
        np.savez(
            temporary,
            texts=np.frombuffer("\0".join(texts).encode("utf-8"), dtype=np.uint8),
            vectors=np.stack([self.vectors[text] for text in texts]),
        )
        temporary.replace(self.file)


@dataclass(frozen=True)
class PairResources:
    """What the aligners need for one language pair of the gold data."""

    dictionary: BilingualDictionary | None
    static: TokenEmbeddings
    encoder: Encoder | None


@dataclass(frozen=True)
class AlignerSpec:
    """One aligner of the benchmark: how to build it for a pair and a setting, and what to select among.

    ``options`` are the candidate values of each choice (the middle one is where the selection
    starts); ``default`` is the setting the library uses when called without arguments.
    """

    build: Callable[[PairResources, Setting], BeadAligner]
    options: dict[str, tuple[Any, ...]]
    default: Setting
    needs_dictionary: bool = False
    needs_encoder: bool = False


#: Candidate values of the Hunalign-style aligner's choices (:mod:`bitextflow.align.lexical`).
HUNALIGN_OPTIONS: dict[str, tuple[Any, ...]] = {
    "weight": (3.0, 4.5, 6.0, 9.0),
    "null_prior": (0.01, 0.03, 0.1),
    "stem_chars": (4, 5, 6),
    "min_identical_chars": (3, 4, 5),
}
HUNALIGN_DEFAULT: Setting = {
    "weight": lexical.DICTIONARY_WEIGHT,
    "null_prior": lexical.NULL_PRIOR,
    "stem_chars": lexical.STEM_CHARS,
    "min_identical_chars": lexical.MIN_IDENTICAL_CHARS,
}
#: Candidate values of Vecalign's choices (:mod:`bitextflow.align.embedding`); overlaps of at most 4,
#: as the paper's 4 and the encoder's vectors of the gold files' overlaps allow.
VECALIGN_OPTIONS: dict[str, tuple[Any, ...]] = {
    "deletion_cost": (0.6, 0.7, 0.8, 0.9, 1.0, 1.2),
    "multi_penalty": (0.0, 0.1),
    "max_overlap": (2, 3, 4),
}
VECALIGN_DEFAULT: Setting = {
    "deletion_cost": embedding.DELETION_COST,
    "multi_penalty": embedding.MULTI_PENALTY,
    "max_overlap": embedding.DEFAULT_MAX_OVERLAP,
}
#: Candidate values of the hybrid aligner's choices (:class:`bitextflow.align.hybrid.HybridChoices`).
HYBRID_OPTIONS: dict[str, tuple[Any, ...]] = {
    "dictionary_weight": (0.5, 1.0, 2.0),
    "length_weight": (0.05, 0.1, 0.2),
    "deletion_cost": (0.8, 1.0, 1.2, 1.4),
    "multi_penalty": (0.0, 0.1),
    "centring": ("none", "mean", "mean-and-axis"),
    "stem_chars": (4, 5, 6),
    "min_identical_chars": (3, 4, 5),
    "max_overlap": (2, 3, 4),
}


def _hybrid(embeddings: Callable[[PairResources], Any], with_dictionary: bool) -> Callable[[PairResources, Setting], BeadAligner]:
    def build(resources: PairResources, setting: Setting) -> BeadAligner:
        return functools.partial(
            align_sentences_hybrid,
            embeddings=embeddings(resources),
            dictionary=resources.dictionary if with_dictionary else None,
            choices=HybridChoices(**setting),
        )

    return build


def _lexical(with_dictionary: bool) -> Callable[[PairResources, Setting], BeadAligner]:
    def build(resources: PairResources, setting: Setting) -> BeadAligner:
        return functools.partial(align_sentences_lexical, dictionary=resources.dictionary if with_dictionary else None, **setting)

    return build


#: Every aligner of the benchmark.
SPECS: dict[str, AlignerSpec] = {
    "gale-church": AlignerSpec(lambda resources, setting: align_sentences, {}, {}),
    "hunalign-dict": AlignerSpec(_lexical(True), HUNALIGN_OPTIONS, HUNALIGN_DEFAULT, needs_dictionary=True),
    "hunalign-nodict": AlignerSpec(_lexical(False), HUNALIGN_OPTIONS, HUNALIGN_DEFAULT),
    "vecalign-e5": AlignerSpec(
        lambda resources, setting: functools.partial(align_sentences_embedding, encoder=resources.encoder, **setting),
        VECALIGN_OPTIONS,
        VECALIGN_DEFAULT,
        needs_encoder=True,
    ),
    "hybrid": AlignerSpec(
        _hybrid(lambda resources: resources.static, True),
        HYBRID_OPTIONS,
        dataclasses.asdict(STATIC_CHOICES),
        needs_dictionary=True,
    ),
    "hybrid-nodict": AlignerSpec(
        _hybrid(lambda resources: resources.static, False), HYBRID_OPTIONS, dataclasses.asdict(STATIC_CHOICES)
    ),
    "hybrid-e5": AlignerSpec(
        _hybrid(lambda resources: resources.encoder, True),
        HYBRID_OPTIONS,
        dataclasses.asdict(ENCODER_CHOICES),
        needs_dictionary=True,
        needs_encoder=True,
    ),
}


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

#: The score stage's length rule, which the stage gives the trim (a side too long for the other is cut where it can be).
MAX_LENGTH_RATIO = ScoreConfig().max_length_ratio
PARAGRAPH_MARKER = "<p>"
#: The language pair of the Bleualign files and of the hunalign ``dtm`` file.
HUNALIGN_PAIR = "hu-en"


class DataMissing(Exception):
    """Gold data is not where it was expected; the message is shown as is."""


@dataclass
class DocumentPair:
    """One gold file: its two sides, its gold links, and its language pair (``source-target``)."""

    name: str
    src: list[str]
    tgt: list[str]
    gold: list[Link]
    languages: str


def _lines(path: Path, encoding: str = "utf-8") -> list[str]:
    return path.read_text(encoding=encoding).splitlines()


def load_bleualign(data: Path, languages: str) -> list[DocumentPair]:
    """Every ``X.de``/``X.fr``/``X.defr`` triple in ``data``, ``dev`` included."""
    if not data.is_dir():
        raise DataMissing(f"gold data not found: {data} is not a directory (expected X.de, X.fr, X.defr files)")
    documents = []
    for gold_path in sorted(data.glob("*.defr")):
        name = gold_path.name.removesuffix(".defr")
        de, fr = data / f"{name}.de", data / f"{name}.fr"
        if not (de.is_file() and fr.is_file()):
            continue
        documents.append(DocumentPair(name, _lines(de), _lines(fr), read_links(gold_path), languages))
    if not documents:
        raise DataMissing(f"gold data not found: no X.de/X.fr/X.defr triples in {data}")
    return documents


def load_hunalign(data: Path) -> tuple[DocumentPair, dict[str, int]]:
    """The hunalign hand alignment ``dtm`` as a document pair without its ``<p>`` lines, and their number per side.

    ``hand.ladder`` indexes lines of ``hu.sen``/``en.sen`` as they are in the files, ``<p>`` lines
    included (the last rung is the two line counts); consecutive rungs delimit one gold bead. The
    aligner gets the sentences without the ``<p>`` lines, so the gold beads are renumbered into
    them and a bead of ``<p>`` lines alone is dropped: paragraph markers are neither credited nor
    penalised.
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
    hu_kept, hu_number = _without_markers(hu)
    en_kept, en_number = _without_markers(en)
    gold = [
        (
            tuple(hu_number[i] for i in range(h0, h1) if i in hu_number),
            tuple(en_number[j] for j in range(e0, e1) if j in en_number),
        )
        for (h0, e0), (h1, e1) in zip(rungs, rungs[1:], strict=False)
    ]
    markers = {"hu": len(hu) - len(hu_kept), "en": len(en) - len(en_kept)}
    return DocumentPair("dtm", hu_kept, en_kept, [bead for bead in gold if bead[0] or bead[1]], HUNALIGN_PAIR), markers


def _without_markers(lines: list[str]) -> tuple[list[str], dict[int, int]]:
    """The lines that are not ``<p>``, and each one's new number by its line number."""
    kept = [i for i, line in enumerate(lines) if line.strip() != PARAGRAPH_MARKER]
    return [lines[i] for i in kept], {line: number for number, line in enumerate(kept)}


def bead_scores(document: DocumentPair, predicted: list[Link]) -> dict[str, float | int]:
    """Exact-bead precision, recall and F1 (hunalign's hand-alignment measure), and the link metric, of one file."""
    correct = len(set(document.gold) & set(predicted))
    precision = correct / len(predicted) if predicted else 0.0
    recall = correct / len(document.gold) if document.gold else 0.0
    links = count_links(document.gold, predicted).scores()
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "gold_beads": len(document.gold),
        "predicted_beads": len(predicted),
        "correct_beads": correct,
        # The Bleualign metric on the same data, for comparison across the two sets.
        "strict_f1": links.f1_strict,
        "lax_f1": links.f1_lax,
    }


def run_aligner(aligner: BeadAligner, documents: list[DocumentPair], runs: int) -> tuple[int, float, list[float]]:
    """Beads returned over all documents and the best wall time (seconds) of ``runs`` passes."""
    times = []
    beads = 0
    for _ in range(runs):
        started = time.perf_counter()
        beads = sum(len(aligner(doc.src, doc.tgt)) for doc in documents)
        times.append(time.perf_counter() - started)
    return beads, min(times), times


def _prf(precision: float, recall: float, f1: float) -> dict[str, float]:
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def _figures(counts: dict[str, LinkCounts], files: Sequence[str]) -> dict[str, dict[str, float]]:
    """Strict and lax precision, recall and F1 of ``files`` counted together."""
    scores = pooled(counts, files)
    return {
        "strict": _prf(scores.precision_strict, scores.recall_strict, scores.f1_strict),
        "lax": _prf(scores.precision_lax, scores.recall_lax, scores.f1_lax),
    }


class CrossValidation:
    """One aligner over every gold file: the links of each setting the selections asked for, and the selections."""

    def __init__(self, spec: AlignerSpec, documents: list[DocumentPair], resources: dict[str, PairResources]) -> None:
        self.spec, self.documents, self.resources = spec, documents, resources
        #: Per setting (as sorted items), each file's links and counts.
        self.aligned: dict[tuple[tuple[str, Any], ...], dict[str, tuple[list[Link], LinkCounts]]] = {}
        files = [doc.name for doc in documents]
        started = time.perf_counter()
        self.held_out = leave_one_file_out(spec.options, self.counts_of, files)
        self.all_files = select_setting(spec.options, self.counts_of, files)
        self.seconds = time.perf_counter() - started

    def _aligned(self, setting: Setting) -> dict[str, tuple[list[Link], LinkCounts]]:
        key = tuple(sorted(setting.items()))
        if key not in self.aligned:
            self.aligned[key] = {}
            for doc in self.documents:
                links = _links(self.spec.build(self.resources[doc.languages], setting)(doc.src, doc.tgt))
                self.aligned[key][doc.name] = links, count_links(doc.gold, links)
        return self.aligned[key]

    def counts_of(self, setting: Setting) -> dict[str, LinkCounts]:
        """Every file's counts aligned with ``setting`` (aligned on first request)."""
        return {name: counts for name, (_, counts) in self._aligned(setting).items()}

    def links_of(self, setting: Setting, name: str) -> list[Link]:
        """The links of file ``name`` aligned with ``setting``."""
        return self._aligned(setting)[name][0]

    def report(self, scored: Sequence[str]) -> dict[str, Any]:
        """The ``leave_one_out``, ``selection`` and ``per_file`` entries of the benchmark's JSON for this aligner."""
        held_out = {name: self.counts_of(setting)[name] for name, setting in self.held_out.items()}
        return {
            "leave_one_out": {
                **_figures(held_out, scored),
                "per_file": {
                    name: {"strict_f1": round(held_out[name].scores().f1_strict, 4), "setting": setting}
                    for name, setting in self.held_out.items()
                },
            },
            "selection": {
                "all_files": self.all_files,
                "default": self.spec.default,
                "default_is_selected": self.all_files == self.spec.default,
                "settings_aligned": len(self.aligned),
                "seconds": round(self.seconds, 1),
            },
            "per_file": {
                name: {"strict_f1": round(counts.scores().f1_strict, 4), "lax_f1": round(counts.scores().f1_lax, 4)}
                for name, counts in self.counts_of(self.spec.default).items()
            },
        }


def time_dictionary(pair: str, runs: int) -> dict[str, object]:
    """Seconds (wall and CPU, best of ``runs``) to load a dictionary from its binary form, to parse its TSV, and to build its word table."""
    lang_a, _, lang_b = pair.partition("-")
    dictionary = load_dictionary(lang_a, lang_b)  # built first if missing, binary form made: not timed
    if dictionary is None:
        return {"error": "no dictionary (see the log)"}
    tsv = tsv_path(lang_a, lang_b)
    timings: dict[str, object] = {"lemma_pairs": len(dictionary)}
    for name, work in (
        ("load", lambda: load_dictionary(lang_a, lang_b, build=False)),
        ("tsv_parse", lambda: read_tsv(tsv)),
        ("word_table", lambda: WordTranslations(dictionary)),
    ):
        walls, cpus = [], []
        for _ in range(runs):
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            work()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        timings[f"{name}_seconds"] = round(min(walls), 3)
        timings[f"{name}_cpu_seconds"] = round(min(cpus), 3)
    return timings


def _described(dictionary: BilingualDictionary | None) -> dict[str, object] | None:
    """Size and packages of a dictionary for the JSON report (None: the pair has none)."""
    if dictionary is None:
        return None
    packages = [f"{p['name']} {p['version']}" for p in dictionary.manifest["packages"]]
    return {"lemma_pairs": len(dictionary), "packages": packages}


#: Thresholds of each coverage form the cross-validation chooses among (:mod:`bitextflow.score.margin_coverage`).
COVERAGE_THRESHOLDS = {
    "relative": tuple(round(0.80 + 0.01 * k, 2) for k in range(19)),
    "cosine": tuple(round(0.70 + 0.01 * k, 2) for k in range(26)),
}


def coverage_examples(document: DocumentPair) -> list[tuple[Link, bool]]:
    """Beads of one gold file for the coverage rule: its gold beads with several sentences on a side (right), and each
    gold 1-1 bead with the next or previous sentence of the neighbouring bead joined to one side (wrong)."""
    examples: list[tuple[Link, bool]] = [((s, t), True) for s, t in document.gold if s and t and len(s) + len(t) > 2]
    for s, t in (bead for bead in document.gold if len(bead[0]) == 1 and len(bead[1]) == 1):
        (i,), (j,) = s, t
        for extra_src, extra_tgt in (((i, i + 1), t), ((i - 1, i), t), (s, (j, j + 1)), (s, (j - 1, j))):
            inside = all(0 <= k < len(document.src) for k in extra_src) and all(0 <= k < len(document.tgt) for k in extra_tgt)
            if inside:
                examples.append(((tuple(extra_src), tuple(extra_tgt)), False))
    return examples


def trim_figures(documents: list[DocumentPair], encoder: Encoder) -> dict[str, dict[str, int]]:
    """Per gold file, what cutting a bead of one sentence against several to its closest sentence
    (:func:`bitextflow.score.margin_coverage.trimmed`, with the sentences' lengths and the score stage's length ratio as
    align_sentences gives them) does to :func:`coverage_examples`' beads of that shape: right
    beads cut (a translator's merge lost), and wrong beads (a 1-1 bead with its neighbour's sentence) cut back to the
    gold 1-1 bead."""
    figures = {}
    for document in documents:
        src_vectors, tgt_vectors = encoder.encode(document.src), encoder.encode(document.tgt)
        src_lengths, tgt_lengths = ([weighted_length(text.strip()) for text in side] for side in (document.src, document.tgt))
        gold = {(tuple(s), tuple(t)) for s, t in document.gold}
        counts = {"right": 0, "right_cut": 0, "wrong": 0, "wrong_restored": 0}
        for (s, t), right in coverage_examples(document):
            if (len(s) > 1) == (len(t) > 1):
                continue
            lengths = ([src_lengths[i] for i in s], [tgt_lengths[j] for j in t])
            cut = margin_coverage.trimmed(src_vectors[list(s)], tgt_vectors[list(t)], lengths, MAX_LENGTH_RATIO)
            kind = "right" if right else "wrong"
            counts[kind] += 1
            if cut is not None and right:
                counts["right_cut"] += 1
            elif cut is not None:
                side, index = cut
                counts["wrong_restored"] += (((s[index],), t) if side == 0 else (s, (t[index],))) in gold
        figures[document.name] = counts
    return figures


def coverage_cross_validation(documents: list[DocumentPair], encoder: Encoder) -> dict[str, Any]:
    """Leave one file out: the form and threshold of the coverage rule with the best Youden's J (right beads kept minus
    wrong beads kept) on the other files, scored on the held-out one; then the choice on all files."""
    scores: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for document in documents:
        src_vectors, tgt_vectors = encoder.encode(document.src), encoder.encode(document.tgt)
        examples = coverage_examples(document)
        labels = np.array([right for _, right in examples], dtype=bool)
        scores[document.name] = {
            form: (
                np.array(
                    [
                        margin_coverage.coverage(src_vectors[list(s)], tgt_vectors[list(t)], form == "relative")
                        for (s, t), _ in examples
                    ]
                ),
                labels,
            )
            for form in COVERAGE_THRESHOLDS
        }

    def kept(names: Sequence[str], form: str, threshold: float) -> tuple[float, float, int, int]:
        values = np.concatenate([scores[name][form][0] for name in names])
        labels = np.concatenate([scores[name][form][1] for name in names])
        keep = values >= threshold
        right, wrong = int(labels.sum()), int((~labels).sum())
        return float(keep[labels].mean()) if right else 0.0, float(keep[~labels].mean()) if wrong else 0.0, right, wrong

    def choose(names: Sequence[str]) -> tuple[str, float]:
        candidates = [(form, threshold) for form, thresholds in COVERAGE_THRESHOLDS.items() for threshold in thresholds]
        return max(candidates, key=lambda c: (round(kept(names, *c)[0] - kept(names, *c)[1], 6), c[0] == "relative", -c[1]))

    folds = {}
    for held_out in scores:
        form, threshold = choose([name for name in scores if name != held_out])
        right_kept, wrong_kept, right, wrong = kept([held_out], form, threshold)
        folds[held_out] = {"form": form, "threshold": threshold, "right_kept": round(right_kept, 4),
                           "wrong_kept": round(wrong_kept, 4), "right": right, "wrong": wrong}  # fmt: skip
    right_total = sum(fold["right"] for fold in folds.values())
    wrong_total = sum(fold["wrong"] for fold in folds.values())
    form, threshold = choose(list(scores))
    shipped = kept(list(scores), "cosine", margin_coverage.MIN_COVERAGE)
    return {
        "folds": folds,
        "held_out": {
            "right_kept": round(sum(f["right_kept"] * f["right"] for f in folds.values()) / max(right_total, 1), 4),
            "wrong_kept": round(sum(f["wrong_kept"] * f["wrong"] for f in folds.values()) / max(wrong_total, 1), 4),
            "right": right_total,
            "wrong": wrong_total,
        },
        "chosen_on_all": {"form": form, "threshold": threshold},
        "shipped": {
            "form": "cosine",
            "threshold": margin_coverage.MIN_COVERAGE,
            "right_kept": round(shipped[0], 4),
            "wrong_kept": round(shipped[1], 4),
        },  # fmt: skip
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"Bleualign-format gold folder (default {DEFAULT_DATA})")
    parser.add_argument(
        "--include-dev", action="store_true", help="also score dev (every setting is selected with it either way)"
    )
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
        "--embedding-runs",
        type=int,
        default=1,
        help="timed passes of vecalign-e5 and hybrid-e5 with a fresh encoder (slow on CPU; 0: time costs and search only; default 1)",
    )
    parser.add_argument(
        "--skip-embedding", action="store_true", help="leave out vecalign-e5 and hybrid-e5 (no encoder is loaded)"
    )
    parser.add_argument("--embedding-cache", type=Path, default=None, help="folder keeping the encoder's vectors across runs")
    parser.add_argument(
        "--static-model", type=Path, default=None, help="static embedding folder for hybrid (default: the distilled one)"
    )
    parser.add_argument(
        "--time-dictionaries", nargs="*", default=[], metavar="PAIR", help="also time loading these dictionaries (e.g. en-de)"
    )
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="only cross-validate the coverage rule of multi-sentence beads, and count what cutting a bead to its "
        "closest sentence does (needs the encoder)",
    )
    args = parser.parse_args(argv)

    try:
        documents = load_bleualign(args.data, args.languages)
        hunalign_dir = args.hunalign_data or DEFAULT_HUNALIGN
        hunalign = load_hunalign(hunalign_dir) if args.hunalign_data is not None or hunalign_dir.is_dir() else None
    except DataMissing as error:
        print(f"sentence_alignment: {error}", file=sys.stderr)
        return 2
    if hunalign is None:
        print(
            f"note: hunalign data not found at {hunalign_dir}; settings are selected on the Bleualign files alone",
            file=sys.stderr,
        )
    scored = [doc.name for doc in documents if doc.name != "dev" or args.include_dev]
    selection_documents = documents + ([hunalign[0]] if hunalign is not None else [])
    if args.coverage:
        from bitextflow.models.encoder import SentenceEncoder

        cached = CachedEncoder(SentenceEncoder.from_path(), args.embedding_cache)
        validated = coverage_cross_validation(selection_documents, cached)
        validated["trim"] = trim_figures(selection_documents, cached)
        for name, figures in validated["trim"].items():
            print(f"  {name}: cut to one sentence: right beads {figures['right_cut']} of {figures['right']}, wrong beads "
                  f"restored {figures['wrong_restored']} of {figures['wrong']}")  # fmt: skip
        for name, fold in validated["folds"].items():
            print(f"  {name}: {fold['form']} >= {fold['threshold']}: right kept {fold['right_kept']:.3f} of {fold['right']}, "
                  f"wrong kept {fold['wrong_kept']:.3f} of {fold['wrong']}")  # fmt: skip
        print(
            f"held out: {validated['held_out']}; chosen on all files: {validated['chosen_on_all']}; shipped {validated['shipped']}"
        )
        if args.json:
            print(json.dumps({"coverage": validated, "encoder": str(cached.encoder.path), "runtime": cached.encoder.runtime}))
        return 0

    gold_links = sum(len(doc.gold) for doc in documents if doc.name in scored)
    print(
        f"Bleualign de-fr gold: {args.data} | scored: {', '.join(scored)} | settings selected on: "
        f"{', '.join(doc.name for doc in selection_documents)} | {gold_links} gold links scored"
    )
    result: dict[str, Any] = {
        "data": str(args.data),
        "files": scored,
        "selection_files": [doc.name for doc in selection_documents],
        "sentences": sum(len(doc.src) + len(doc.tgt) for doc in documents if doc.name in scored),
        "gold_links": gold_links,
        "runs": args.runs,
        "aligners": {},
        "leave_one_out": {},
        "selection": {},
        "per_file": {},
        "published": PUBLISHED,
        "hunalign_dtm": {} if hunalign is not None else None,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    static = StaticEmbeddings.from_path(args.static_model)
    result["static_model"] = str(static.path)
    encoder: CachedEncoder | None = None
    if not args.skip_embedding:
        from bitextflow.models.encoder import SentenceEncoder

        encoder = CachedEncoder(SentenceEncoder.from_path(), args.embedding_cache)
        result["encoder"] = str(encoder.encoder.path)
    dictionaries = {args.languages: load_dictionary(*args.languages.split("-"))}
    if hunalign is not None:
        dictionaries[HUNALIGN_PAIR] = load_dictionary(*HUNALIGN_PAIR.split("-"))
    result["dictionaries"] = {pair: _described(dictionary) for pair, dictionary in dictionaries.items()}
    resources = {pair: PairResources(dictionary, static, encoder) for pair, dictionary in dictionaries.items()}

    # The encoder aligners are timed with the encoder itself, every text encoded, when there are embedding runs.
    encoding_timed = encoder is not None and args.embedding_runs > 0
    timing = {False: resources[args.languages], True: resources[args.languages]}
    if encoder is not None and encoding_timed:
        timing[True] = dataclasses.replace(resources[args.languages], encoder=encoder.encoder)
    scored_documents = [doc for doc in documents if doc.name in scored]
    for name, spec in SPECS.items():
        if (spec.needs_encoder and encoder is None) or (spec.needs_dictionary and any(d is None for d in dictionaries.values())):
            continue
        validation = CrossValidation(spec, selection_documents, resources)
        beads, best, times = run_aligner(
            spec.build(timing[spec.needs_encoder], spec.default),
            scored_documents,
            args.embedding_runs if spec.needs_encoder and encoding_timed else args.runs,
        )
        figures = _figures(validation.counts_of(spec.default), scored)
        result["aligners"][name] = {
            **figures,
            "pairs_per_s": round(beads / best, 1) if best > 0 else float("inf"),
            "beads": beads,
            "sentences_per_s": round(result["sentences"] / best, 1) if best > 0 else float("inf"),
            "best_seconds": round(best, 4),
            "all_seconds": [round(t, 4) for t in times],
            **({"encoding_timed": encoding_timed} if spec.needs_encoder else {}),
        }
        for key, value in validation.report(scored).items():
            result[key][name] = value
        if hunalign is not None:
            scored_dtm = bead_scores(hunalign[0], validation.links_of(spec.default, hunalign[0].name))
            result["hunalign_dtm"][name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in scored_dtm.items()}
        print(
            f"  {name}: strict F1 {figures['strict']['f1']:.4f} all files, {result['leave_one_out'][name]['strict']['f1']:.4f} "
            f"leave one file out ({len(validation.aligned)} settings aligned, {validation.seconds:.0f} s)",
            flush=True,
        )
    if encoder is not None:
        result["encoding"] = {"texts": encoder.texts, "seconds": round(encoder.seconds, 1)}
    if hunalign is not None:
        result["hunalign_dtm_paragraph_markers"] = hunalign[1]
    result["dictionary_load"] = {pair: time_dictionary(pair, args.runs) for pair in args.time_dictionaries}
    _print_tables(result)
    if args.json:
        print(json.dumps(result, sort_keys=False))
    return 0


def _print_tables(result: dict[str, Any]) -> None:
    header = (
        f"{'aligner':<18} {'LOFO F1':>8} {'strict P':>8} {'strict R':>8} {'strict F1':>9} "
        f"{'lax P':>7} {'lax R':>7} {'lax F1':>7} {'pairs/s':>10}"
    )
    print()
    print("strict F1 leave one file out (LOFO) beside all files (strict / lax P, R, F1):")
    print(header)
    print("-" * len(header))
    for name, row in result["aligners"].items():
        s, lx = row["strict"], row["lax"]
        print(
            f"{name:<18} {result['leave_one_out'][name]['strict']['f1']:>8.3f} {s['precision']:>8.3f} {s['recall']:>8.3f} "
            f"{s['f1']:>9.3f} {lx['precision']:>7.3f} {lx['recall']:>7.3f} {lx['f1']:>7.3f} {row['pairs_per_s']:>10,.0f}"
        )
    for name, row in PUBLISHED.items():
        label = f"{name} (pub., {row['test_sets']})"
        print(f"{label:<27} {'':>8} {'':>8} {row['strict']['f1']:>9.3f} {'':>7} {'':>7} {row['lax']['f1']:>7.3f}")
    print()
    print("Per file, strict F1 leave one file out / all files:")
    for name, files in result["per_file"].items():
        held_out = result["leave_one_out"][name]["per_file"]
        print(f"  {name}: " + ", ".join(f"{f} {held_out[f]['strict_f1']:.3f}/{v['strict_f1']:.3f}" for f, v in files.items()))
    print()
    print("Selected on all files (library default?):")
    for name, row in result["selection"].items():
        print(
            f"  {name}: {row['all_files']} ({'the default' if row['default_is_selected'] else 'NOT the default: ' + str(row['default'])})"
        )
    if result["hunalign_dtm"]:
        print()
        header = f"{'aligner':<18} {'bead P':>8} {'bead R':>8} {'bead F1':>8} {'correct':>9} {'strict F1':>9} {'lax F1':>7}"
        print("hunalign en-hu dtm (defaults):")
        print(header)
        print("-" * len(header))
        for name, row in result["hunalign_dtm"].items():
            print(
                f"{name:<18} {row['precision']:>8.3f} {row['recall']:>8.3f} {row['f1']:>8.3f} "
                f"{row['correct_beads']:>4}/{row['predicted_beads']:<4} {row['strict_f1']:>9.3f} {row['lax_f1']:>7.3f}"
            )
    for pair, row in result["dictionary_load"].items():
        print(f"dictionary {pair}: {row}")


if __name__ == "__main__":
    sys.exit(main())
