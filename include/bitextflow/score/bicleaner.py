"""bifixer + bicleaner-hardrules + bicleaner-ai, run in their own environment.

bicleaner-ai needs tensorflow 2.20, transformers 4.57 and numpy < 2, which would downgrade Airflow's
environment, so it lives in ``.venv-bicleaner`` (``make setup``) or in the bicleaner image
(docker/bicleaner.Dockerfile). This module, in the main environment, finds that environment and the
model, and builds the one command both places run (``envscripts/score_pairs.py``); the score stage
passes it presigned S3 URLs, so the other environment needs no credentials and no S3 library. The URLs
travel in the scorer's environment (``--input env:NAME``): every local user may read a process's
arguments in ``/proc/<pid>/cmdline``, not its environment.

The model: a deployment may point ``score.bicleaner_model`` at a folder of bicleaner-ai's published models that it
downloaded (``bicleaner-ai-download en es full DIR``, or the Hugging Face repository ``bitextor/bicleaner-ai-full-en-es``),
checked against the layout bicleaner-ai reads (:mod:`bitextflow.score.bicleaner_layout`). Those models come from a model hub,
which is unreachable here, so ``python -m bitextflow.score.bicleaner build en-es`` (``make models``, or ``make demo`` for a demo pair config
that scores with bicleaner) trains a lite one (``dec_attention``,
Zaragoza-Bernabeu et al., 2022, "Bicleaner AI: Bicleaner goes neural", LREC) on parallel text of Debian
packages (Bible verses, translated documentation, message catalogs, a dictionary:
:mod:`bitextflow.score.training_data`), its embeddings started from cross-lingual vectors
(:func:`piece_embeddings`) instead of GloVe, into
``~/.cache/bitextflow/models/bicleaner-<pair>/v<N>/`` with a ``bitextflow-model.json`` recording its
sha256, training data counts and settings. bicleaner-ai 3.x lite models need no probabilistic
dictionary (SentencePiece + GloVe embeddings trained on the corpus itself).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bitextflow.errors import StageError
from bitextflow.hashing import tree_sha256
from bitextflow.score.bicleaner_layout import model_folder_problems
from bitextflow.score.training_data import bible_verse_pairs, catalog_pairs, dictionary_pairs, documentation_pairs
from bitextflow.settings import bicleaner_python, cache_dir

log = logging.getLogger(__name__)
MODEL_VERSION = 4
MODEL_METADATA = "bitextflow-model.json"
SCRIPTS_DIR = Path(__file__).resolve().parent / "envscripts"
SCORE_SCRIPT = SCRIPTS_DIR / "score_pairs.py"
TRAIN_SCRIPT = SCRIPTS_DIR / "train_model.py"
_RULE = re.compile(r"[^(,]+(?:\([^)]*\))?")
# Sized for `make setup` on 2 cores (docs/score.md has the measured minutes and what each setting buys);
# the model's metadata records them. Classifier settings go to envscripts/train_model.py, noise ratios
# (negatives per positive: a random partner, words omitted; the neighbour noise adds the previous and next
# sentence's partners) to bicleaner-ai-train.
TRAINING = {
    "vocab_size": 8000, "emb_dim": 100, "maxlen": 48, "n_hidden": 128, "lr": 0.001,
    "batch_size": 128, "epochs": 4, "steps_per_epoch": 900, "embedding_scale": 0.1,
    "rand_ratio": 1, "womit_ratio": 1, "neighbour_mix": True, "seed": 13,
    "valid_verses": 400, "valid_documentation": 400, "documentation_repeats": 2, "monolingual_lines": 100_000,
}  # fmt: skip
#: Seconds between the lines that say the trainer still runs (it trains for minutes without a word).
TRAINER_HEARTBEAT_S = 60
CLASSIFIER_SETTINGS = ("vocab_size", "emb_dim", "maxlen", "n_hidden", "lr", "batch_size", "epochs", "steps_per_epoch")
# The variables that carry the scorer's presigned URLs, and the --input and --output that name them.
INPUT_URL_VARIABLE = "BITEXTFLOW_SCORE_INPUT_URL"
OUTPUT_URL_VARIABLE = "BITEXTFLOW_SCORE_OUTPUT_URL"
URLS_FROM_ENVIRONMENT = (f"env:{INPUT_URL_VARIABLE}", f"env:{OUTPUT_URL_VARIABLE}")


def default_model_dir(pair: str, version: int = MODEL_VERSION) -> Path:
    return cache_dir("models", f"bicleaner-{pair}", f"v{version}")


def model_dir(pair: str, configured: str = "default") -> Path:
    """The model folder a pair config names: ``score.bicleaner_model`` (a path, or ``default`` for the built one)."""
    return default_model_dir(pair) if configured == "default" else Path(configured).expanduser()


def missing_parts(pair: str, configured: str = "default") -> list[str]:
    """What stops scoring, one readable line each; empty when the environment and the model are there."""
    problems = []
    python = bicleaner_python()
    if not python.exists():
        problems.append(f"bicleaner environment missing: {python} does not exist; build it with `make models`")
    model = model_dir(pair, configured)
    if not (model / "metadata.yaml").is_file():
        fix = (
            "build it with `make models` (about 10 minutes on 2 cores)"
            if configured == "default"
            else f"build one with `python -m bitextflow.score.bicleaner build {pair}`, or download a published one there "
            f"(`bicleaner-ai-download {pair.replace('-', ' ')} full {model}`)"
        )
        problems.append(f"bicleaner-ai model missing: {model / 'metadata.yaml'} does not exist; {fix}")
    else:
        problems += model_folder_problems(model, *pair.split("-"))
    return problems


def built_by_bitextflow(model: Path) -> bool:
    """Whether ``model`` was trained by :func:`build_model` (it has our :data:`MODEL_METADATA`), not downloaded."""
    return (model / MODEL_METADATA).is_file()


def require_available(pair: str, configured: str = "default") -> Path:
    """The model folder, or a StageError naming what is missing and how to get it."""
    problems = missing_parts(pair, configured)
    if problems:
        raise StageError("; ".join(problems) + " (or set score.use_bicleaner: if-installed to score with the hard rules only)")
    return model_dir(pair, configured)


def score_arguments(model: Path | str, source: str, target: str, input_: str, output: str) -> list[str]:
    """Arguments of ``score_pairs.py``; the worker puts the bicleaner Python and the script in front. ``input_`` and
    ``output`` are paths, or ``env:<variable>`` for a URL in that variable (never a signed URL itself)."""
    return ["--model", str(model), "--source", source, "--target", target, "--input", input_, "--output", output]


def run_scoring(arguments: Sequence[str], env: Mapping[str, str] | None = None, timeout_s: float | None = None) -> None:
    """Run ``score_pairs.py`` with ``arguments`` in the bicleaner environment, from the main one (CLI, a local DAG
    task, tests), with ``env`` added to this process's environment, stopped after ``timeout_s``."""
    try:
        result = subprocess.run(
            [str(bicleaner_python()), str(SCORE_SCRIPT), *arguments],
            capture_output=True, text=True, check=False, env={**os.environ, **(env or {})}, timeout=timeout_s,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise StageError(
            f"bicleaner scoring ran past its limit of {timeout_s:.0f} s, after which its presigned URLs expire; "
            "score smaller shards, or give the DAG's bicleaner task a longer execution_timeout"
        ) from None
    if result.returncode != 0:
        raise StageError(f"bicleaner scoring failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}")


def read_scores(text: str) -> list[tuple[str, str, str, float]]:
    """Rows of the scorer's output: (fixed text_a, fixed text_b, hardrules tag, bicleaner score)."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 4:
            raise StageError(f"bicleaner output line {number} has {len(fields)} fields, expected 4: {line[:200]!r}")
        rows.append((fields[0], fields[1], fields[2], float(fields[3])))
    return rows


def first_hardrule(tag: str) -> str:
    """``no_urls(left),not_too_long(left,right)`` -> ``no_urls(left)``: hardrules lists every failed rule with --run_all_rules."""
    match = _RULE.match(tag)
    return match.group(0) if match else tag


def pairs_tsv(pairs: Sequence[tuple[str, str]]) -> str:
    """The scorer's input; tabs and line breaks inside a sentence would shift columns or lines."""
    return "".join(f"{_one_line(a)}\t{_one_line(b)}\n" for a, b in pairs)


def _one_line(text: str) -> str:
    return " ".join(text.replace("\t", " ").splitlines())


# -- the model ---------------------------------------------------------------------------------------
def model_metadata(model: Path) -> dict:
    path = model / MODEL_METADATA
    if not path.is_file():
        raise StageError(f"{path} missing: {model} was not built by bitextflow; rebuild it with `make models`")
    return json.loads(path.read_text(encoding="utf-8"))


def build_model(pair: str, out: Path | None = None, force: bool = False) -> Path:
    """Train the lite model of ``pair`` (``en-es``) into ``out``; a no-op when it is already there."""
    python = bicleaner_python()
    out = out or default_model_dir(pair)
    if (out / MODEL_METADATA).is_file() and not force:
        return out
    if not python.exists():
        raise StageError(f"bicleaner environment missing: {python} does not exist; build it with `make models`")
    source, target = pair.split("-")
    started = time.monotonic()
    log.info("training the bicleaner-ai lite model of %s into %s (about 10 minutes on 2 cores; once)", pair, out)
    corpus = training_corpus(source, target)
    log.info(
        "training corpus: %d pairs, %d monolingual lines (%.0f s)",
        len(corpus.train),
        len(corpus.monolingual),
        time.monotonic() - started,
    )
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bitextflow-bicleaner-train-") as tmp:
        work = Path(tmp)
        (work / "train.tsv").write_text(pairs_tsv(corpus.train), encoding="utf-8")
        (work / "valid.tsv").write_text(pairs_tsv(corpus.valid), encoding="utf-8")
        (work / "mono.txt").write_text("\n".join(corpus.monolingual) + "\n", encoding="utf-8")
        classifier = {name: TRAINING[name] for name in CLASSIFIER_SETTINGS}
        _run_trainer([str(TRAIN_SCRIPT), "--vocabulary", json.dumps(classifier), str(out), str(work / "mono.txt")], pair)
        log.info("SentencePiece vocabulary trained (%.0f s); embedding its pieces with the encoder", time.monotonic() - started)
        embeddings = work / "embeddings.npy"
        np.save(embeddings, piece_embeddings(out / "spm.vocab", TRAINING["emb_dim"], TRAINING["embedding_scale"]))
        epochs = f"{TRAINING['epochs']} epochs of {TRAINING['steps_per_epoch']} steps"
        log.info(
            "start vectors ready (%.0f s); training the classifier: %s, the longest part", time.monotonic() - started, epochs
        )
        command = [str(TRAIN_SCRIPT), json.dumps({**classifier, "embeddings": str(embeddings)}), "-m", str(out), "-s", source,
                   "-t", target, "--mono_train", str(work / "mono.txt"), "--parallel_train", str(work / "train.tsv"),
                   "--parallel_valid", str(work / "valid.tsv"), "--classifier_type", "dec_attention",
                   "--seed", str(TRAINING["seed"]), "--rand_ratio", str(TRAINING["rand_ratio"]),
                   "--womit_ratio", str(TRAINING["womit_ratio"]), "--freq_ratio", "0",
                   *(["--neighbour_mix", "yes"] if TRAINING["neighbour_mix"] else []),
                   "--model_name", f"bitextflow/bicleaner-ai-lite-{pair}-v{MODEL_VERSION}", "-q"]  # fmt: skip
        _run_trainer(command, pair)
    log.info("classifier trained (%.0f s)", time.monotonic() - started)
    metadata = {
        "pair": pair,
        "version": MODEL_VERSION,
        "classifier": "bicleaner-ai lite (dec_attention)",
        "sha256": tree_sha256(out, frozenset({MODEL_METADATA})),
        "training_data": corpus.counts,
        "settings": TRAINING,
        "dev_scores": _dev_scores(out),
        "training_seconds": round(time.monotonic() - started, 1),
    }
    (out / MODEL_METADATA).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


def _run_trainer(arguments: list[str], pair: str) -> None:
    """``train_model.py`` in the bicleaner environment, on the 2 threads a shared CI box gives it."""
    env = {**os.environ, "BICLEANER_AI_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "2",
           "TF_CPP_MIN_LOG_LEVEL": "3"}  # fmt: skip
    started = time.monotonic()
    # stderr in a file, not a pipe: minutes of TensorFlow warnings would fill a pipe nobody reads while we wait
    with tempfile.TemporaryFile() as stderr:
        trainer = subprocess.Popen([str(bicleaner_python()), *arguments], stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        while True:
            try:
                returncode = trainer.wait(timeout=TRAINER_HEARTBEAT_S)
                break
            except subprocess.TimeoutExpired:  # it prints nothing for minutes: say that it runs
                log.info("bicleaner-ai-train of %s: running for %.0f s", pair, time.monotonic() - started)
        stderr.seek(0)
        errors = stderr.read().decode("utf-8", errors="replace").strip()
    if returncode != 0:
        raise StageError(f"bicleaner-ai-train failed for {pair} (exit {returncode}): {errors[-2000:]}")


def piece_embeddings(vocabulary: Path, dims: int, scale: float) -> np.ndarray:
    """Cross-lingual start vectors of the classifier's SentencePiece pieces, one row per piece id.

    Each piece's text is embedded on its own by the multilingual sentence encoder (multilingual-e5-small,
    :class:`bitextflow.models.SentenceEncoder`), as Model2Vec distils static vectors from a sentence
    encoder's tokens (Tulkens and van Dongen, 2024; :mod:`bitextflow.models.static`): "▁house" lands near
    "▁casa", so the decomposable attention aligns words across the languages from its first step instead of
    learning every word pair from the parallel data. The vectors are projected on their ``dims`` leading
    principal components and scaled to a standard deviation of ``scale`` (GloVe's order of magnitude: larger
    values overflow the attention's unnormalised exponentials); ``<pad>`` and ``<unk>`` start at zero.
    """
    from bitextflow.models import SentenceEncoder
    from bitextflow.models.static import principal_components

    pieces = [line.split("\t")[0] for line in vocabulary.read_text(encoding="utf-8").splitlines()]
    texts = [piece.replace("\u2581", " ").strip() or piece for piece in pieces]
    vectors = SentenceEncoder.from_path(None).encode(texts, batch_size=256, prefix="")
    projected = principal_components(vectors.astype(np.float64), dims)
    projected *= scale / projected.std()
    projected[:2] = 0  # bicleaner-ai's pad_id and unk_id
    return projected.astype(np.float32)


@dataclass(frozen=True)
class TrainingCorpus:
    train: list[tuple[str, str]]
    valid: list[tuple[str, str]]
    monolingual: list[str]  # both languages mixed: SentencePiece and GloVe are trained on it
    counts: dict[str, int | str | list[str]]


def training_corpus(source: str, target: str) -> TrainingCorpus:
    """Bible verses, documentation blocks (twice: the domain the pipeline scores), message catalogs and dictionary lemmas.

    Each source stays in its own order (canonical verse order, page order, alphabetical lemmas) so that
    bicleaner-ai's neighbour noise pairs a sentence with the next and previous ones of the same text:
    negatives on the same topic and of similar length, which only lexical evidence tells apart (its
    trainer shuffles the examples itself). Validation takes verses and documentation pairs at random
    (dictionary entries are no sentences); the held-out documentation pages
    (:mod:`bitextflow.score.training_data`) are in neither set.
    """
    rng = random.Random(TRAINING["seed"])
    documentation = documentation_pairs(source, target)
    valid_verses, verses = _split_off(list(dict.fromkeys(bible_verse_pairs(source, target))), TRAINING["valid_verses"], rng)
    valid_blocks, blocks = _split_off(list(dict.fromkeys(documentation.train)), TRAINING["valid_documentation"], rng)
    lemmas = sorted({(a, b) for a, b in dictionary_pairs(source, target) if a != b})  # acronyms teach nothing
    catalogs = catalog_pairs(source, target)
    messages = catalogs.pairs
    train = verses + blocks * TRAINING["documentation_repeats"] + messages + lemmas
    monolingual = sorted({_one_line(text) for pair_ in train for text in pair_})
    rng.shuffle(monolingual)
    counts = {
        "bible_verse_pairs": len(verses),
        "documentation_pairs": len(blocks),
        "documentation_pages": documentation.pages,
        "documentation_pages_left_out": documentation.pages_left_out,
        "documentation_held_out_pairs": len(set(documentation.held_out)),
        "dictionary_pairs": len(lemmas),
        "catalog_pairs": len(messages),
        "catalog_packages_missing": catalogs.packages_missing,
        "train_pairs": len(train),
        "valid_pairs": len(valid_verses) + len(valid_blocks),
        "monolingual_lines": min(len(monolingual), TRAINING["monolingual_lines"]),
        "source": "Debian sword-text-web + sword-text-sparv (verses), debian-reference + installation-guide (blocks), "
        "apertium-eng-spa (lemmas), gettext catalogs of training_data.CATALOG_PACKAGES (messages)",
    }
    return TrainingCorpus(train, valid_verses + valid_blocks, monolingual[: TRAINING["monolingual_lines"]], counts)


def _split_off(pairs: list[tuple[str, str]], size: int, rng: random.Random) -> tuple[list, list]:
    """``size`` pairs picked at random, and the others in their order."""
    chosen = set(rng.sample(range(len(pairs)), size))
    return [p for i, p in enumerate(pairs) if i in chosen], [p for i, p in enumerate(pairs) if i not in chosen]


def _dev_scores(model: Path) -> dict[str, float]:
    """bicleaner-ai's own figures on the held-out pairs against its synthetic negatives (its metadata.yaml)."""
    import yaml

    trained = yaml.safe_load((model / "metadata.yaml").read_text(encoding="utf-8"))
    return {name: trained[name] for name in ("precision_score", "recall_score", "f1_score", "matthews_corr_coef")}


def roc_auc(true: np.ndarray, false: np.ndarray) -> float:
    """ROC AUC: the chance that a translation (``true``) outscores a non-translation (``false``), ties counted half;
    by ranks (Mann-Whitney U), so its cost is a sort, not ``len(true) x len(false)``."""
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([true, false]))
    return float((ranks[: len(true)].sum() - len(true) * (len(true) + 1) / 2) / (len(true) * len(false)))


def separation(true: Sequence[float], false: Sequence[float], threshold: float | None = None) -> dict[str, float]:
    """How scores of translations (``true``) stand apart from scores of non-translations: ROC AUC (the chance that
    a translation outscores a non-translation, ties half), the means and, for a threshold, the share of each kept."""
    good, bad = np.asarray(true, dtype=float), np.asarray(false, dtype=float)
    figures = {"auc": roc_auc(good, bad), "mean_translations": float(good.mean()), "mean_shuffled": float(bad.mean())}
    if threshold is not None:
        figures |= {"kept_translations": float((good >= threshold).mean()), "kept_shuffled": float((bad >= threshold).mean())}
    return {name: round(value, 4) for name, value in figures.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bitextflow.score.bicleaner",
        description="Build a pair's bicleaner-ai lite model (`bitextflow models record-bicleaner` records it in the DVC registry).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="train the model of a pair into the cache (no-op when built)")
    build.add_argument("pairs", nargs="+", help="language pairs, e.g. en-es")
    build.add_argument("--force", action="store_true", help="train again even when the model is there")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for pair in args.pairs:
        try:
            model = build_model(pair, force=args.force)
        except StageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        metadata = model_metadata(model)
        print(f"{pair}: {model} ({metadata['training_data']['train_pairs']} training pairs, sha256 {metadata['sha256'][:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
