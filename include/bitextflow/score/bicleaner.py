"""bifixer + bicleaner-hardrules + bicleaner-ai, run in their own environment (DESIGN.md section 4).

bicleaner-ai needs tensorflow 2.20, transformers 4.57 and numpy < 2, which would downgrade Airflow's
environment, so it lives in ``.venv-bicleaner`` (``make setup``) or in the bicleaner image
(docker/bicleaner.Dockerfile). This module, in the main environment, finds that environment and the
model, and builds the one command both places run (``envscripts/score_pairs.py``); the pipeline
passes it presigned S3 URLs, so the other environment needs no credentials and no S3 library.

The model: bicleaner-ai's models come from a model hub, which is unreachable here, so
``python -m bitextflow.score.bicleaner build en-es`` trains a lite one (``dec_attention`` from scratch,
Zaragoza-Bernabeu et al., 2022, "Bicleaner AI: Bicleaner goes neural", LREC) on verse-aligned Debian
Bible packages (:mod:`bitextflow.score.training_data`) into
``~/.cache/bitextflow/models/bicleaner-<pair>/v<N>/`` with a ``bitextflow-model.json`` recording its
sha256, training data counts and settings. bicleaner-ai 3.x lite models need no probabilistic
dictionary (SentencePiece + GloVe embeddings trained on the corpus itself).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bitextflow.errors import StageError

MODEL_VERSION = 1
MODEL_METADATA = "bitextflow-model.json"
SCRIPTS_DIR = Path(__file__).resolve().parent / "envscripts"
SCORE_SCRIPT = SCRIPTS_DIR / "score_pairs.py"
TRAIN_SCRIPT = SCRIPTS_DIR / "train_model.py"
_REPO_ROOT = Path(__file__).resolve().parents[3]
# Training kept to a few minutes on 2 cores; the figures are recorded in the model's metadata.
_RULE = re.compile(r"[^(,]+(?:\([^)]*\))?")
TRAINING = {"vocab_size": 8000, "epochs": 3, "steps_per_epoch": 50, "batch_size": 64, "valid_pairs": 1000, "seed": 13}


def bicleaner_python() -> Path:
    """``$BITEXTFLOW_BICLEANER_PYTHON``, else ``.venv-bicleaner/bin/python`` of this checkout."""
    return Path(os.environ.get("BITEXTFLOW_BICLEANER_PYTHON") or _REPO_ROOT / ".venv-bicleaner" / "bin" / "python")


def models_root() -> Path:
    """``$BITEXTFLOW_CACHE/models``, else ``~/.cache/bitextflow/models``."""
    return Path(os.environ.get("BITEXTFLOW_CACHE") or Path.home() / ".cache" / "bitextflow") / "models"


def default_model_dir(pair: str, version: int = MODEL_VERSION) -> Path:
    return models_root() / f"bicleaner-{pair}" / f"v{version}"


def model_dir(pair: str, configured: str = "default") -> Path:
    """The model folder a pair config names: ``score.bicleaner_model`` (a path, or ``default`` for the built one)."""
    return default_model_dir(pair) if configured == "default" else Path(configured).expanduser()


def missing_parts(pair: str, configured: str = "default") -> list[str]:
    """What stops scoring, one readable line each; empty when the environment and the model are there."""
    problems = []
    python = bicleaner_python()
    if not python.exists():
        problems.append(f"bicleaner environment missing: {python} does not exist; run `make setup`")
    model = model_dir(pair, configured)
    if not (model / "metadata.yaml").is_file():
        fix = (
            "run `make setup`"
            if configured == "default"
            else f"build one with `python -m bitextflow.score.bicleaner build {pair}`"
        )
        problems.append(f"bicleaner-ai model missing: {model / 'metadata.yaml'} does not exist; {fix}")
    return problems


def require_available(pair: str, configured: str = "default") -> Path:
    """The model folder, or a StageError naming what is missing and how to get it."""
    problems = missing_parts(pair, configured)
    if problems:
        raise StageError("; ".join(problems) + " (or set score.use_bicleaner: if-installed to score with the hard rules only)")
    return model_dir(pair, configured)


def score_arguments(model: Path | str, source: str, target: str, input_: str, output: str) -> list[str]:
    """Arguments of ``score_pairs.py``; the worker puts the bicleaner Python and the script in front."""
    return ["--model", str(model), "--source", source, "--target", target, "--input", input_, "--output", output]


def run_scoring(arguments: Sequence[str]) -> None:
    """Run ``score_pairs.py`` with ``arguments`` in the bicleaner environment, from the main one (CLI, tests)."""
    result = subprocess.run([str(bicleaner_python()), str(SCORE_SCRIPT), *arguments], capture_output=True, text=True, check=False)
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
        raise StageError(f"{path} missing: {model} was not built by bitextflow; rebuild with `make setup`")
    return json.loads(path.read_text(encoding="utf-8"))


def tree_sha256(folder: Path) -> str:
    """One digest over every file's relative path and bytes (the metadata file itself excluded)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MODEL_METADATA):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def build_model(pair: str, out: Path | None = None, force: bool = False) -> Path:
    """Train the lite model of ``pair`` (``en-es``) into ``out``; a no-op when it is already there."""
    from bitextflow.score.training_data import bible_verse_pairs

    out = out or default_model_dir(pair)
    if (out / MODEL_METADATA).is_file() and not force:
        return out
    python = bicleaner_python()
    if not python.exists():
        raise StageError(f"bicleaner environment missing: {python} does not exist; run `make setup`")
    source, target = pair.split("-")
    started = time.monotonic()
    pairs = sorted(set(bible_verse_pairs(source, target)))
    random.Random(TRAINING["seed"]).shuffle(pairs)
    valid, train = pairs[: TRAINING["valid_pairs"]], pairs[TRAINING["valid_pairs"] :]
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bitextflow-bicleaner-train-") as tmp:
        work = Path(tmp)
        (work / "train.tsv").write_text(pairs_tsv(train), encoding="utf-8")
        (work / "valid.tsv").write_text(pairs_tsv(valid), encoding="utf-8")
        mono = [_one_line(text) for pair_ in train for text in pair_]
        random.Random(TRAINING["seed"]).shuffle(mono)
        (work / "mono.txt").write_text("\n".join(mono) + "\n", encoding="utf-8")
        command = [str(python), str(TRAIN_SCRIPT), str(TRAINING["vocab_size"]), "-m", str(out), "-s", source, "-t", target,
                   "--mono_train", str(work / "mono.txt"), "--parallel_train", str(work / "train.tsv"),
                   "--parallel_valid", str(work / "valid.tsv"), "--classifier_type", "dec_attention",
                   "--epochs", str(TRAINING["epochs"]), "--steps_per_epoch", str(TRAINING["steps_per_epoch"]),
                   "--batch_size", str(TRAINING["batch_size"]), "--seed", str(TRAINING["seed"]),
                   "--freq_ratio", "0", "--model_name", f"bitextflow/bicleaner-ai-lite-{pair}-v{MODEL_VERSION}"]  # fmt: skip
        env = {**os.environ, "BICLEANER_AI_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "2",
               "TF_CPP_MIN_LOG_LEVEL": "3"}  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if result.returncode != 0:
            raise StageError(f"bicleaner-ai-train failed for {pair} (exit {result.returncode}): {result.stderr.strip()[-2000:]}")
    metadata = {
        "pair": pair,
        "version": MODEL_VERSION,
        "classifier": "bicleaner-ai lite (dec_attention)",
        "sha256": tree_sha256(out),
        "training_data": {
            "source": "Debian sword-text-web + sword-text-sparv, verse-aligned",
            "train_pairs": len(train),
            "valid_pairs": len(valid),
        },  # fmt: skip
        "settings": TRAINING,
        "dev_scores": _dev_scores(out),
        "training_seconds": round(time.monotonic() - started, 1),
    }
    (out / MODEL_METADATA).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


def _dev_scores(model: Path) -> dict[str, float]:
    """bicleaner-ai's own figures on the held-out pairs against its synthetic negatives (its metadata.yaml)."""
    import yaml

    trained = yaml.safe_load((model / "metadata.yaml").read_text(encoding="utf-8"))
    return {name: trained[name] for name in ("precision_score", "recall_score", "f1_score", "matthews_corr_coef")}


def publish_model(store, pair: str, model: Path) -> str:  # noqa: ANN001 - an ObjectStore, imported lazily by callers
    """Upload the model once under ``models/<pair>/bicleaner/v<N>/``; returns that prefix."""
    version = model_metadata(model)["version"]
    prefix = f"models/{pair}/bicleaner/v{version}/"
    if not store.exists(prefix + MODEL_METADATA):
        store.put_tree(prefix, model)
    return prefix


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bitextflow.score.bicleaner", description="Build the bicleaner-ai lite model."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="train the model of a pair into the cache (no-op when built)")
    build.add_argument("pairs", nargs="+", help="language pairs, e.g. en-es")
    build.add_argument("--force", action="store_true", help="train again even when the model is there")
    args = parser.parse_args(argv)
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
