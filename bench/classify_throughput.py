"""Classification speed of the domain classifiers (and bicleaner-ai scoring), with their evaluation metrics.

Speed: sentences per wall second of ``predict_proba`` (tokenising or vectorising, the model, the
softmax: what the classify stage pays per side) for the tf-idf SVM baseline, the fine-tuned
transformer and the probe (logistic regression on the frozen encoder), on ``--sentences`` real sentences of the offline labelled sets (English and Spanish test
sentences, cycled), after a warm-up call. bicleaner-ai scoring is timed the same way on pairs of those
sentences when its environment and model are installed (``make setup``), else reported as null; its
figure includes starting the other environment (TensorFlow import), as the score stage pays it per shard.

The multilingual sentence encoder of the align stage (embedding alignment) is timed the same way, as
``encoder_sentences_per_s``. On a GPU both transformers run in bfloat16 (``bitextflow.models.inference``);
there the script also times them in float32 and reports how far the bfloat16 outputs stray
(``"precision_check"``: label agreement and the largest probability difference of the classifier, the
lowest cosine between the two embeddings of a sentence).

Models: ``--svm-model`` / ``--transformer-model`` / ``--probe-model`` folders (``bitextflow train-domain --out``); without
them the models are trained here with the default ``domain.training`` settings (the transformer on
the GPU when there is one) and kept in ``$BITEXTFLOW_CACHE/models/domain/bench-<kind>`` for the next
run. Their evaluation metrics (English test split, Spanish zero-shot) are printed from the folders'
metadata. The same script runs unchanged on a CUDA machine and reports ``"device": "cuda"`` there.

Usage, from the project root::

    .venv/bin/python bench/classify_throughput.py [--json] [--device cpu|cuda] [--sentences N]
                                                  [--svm-model DIR] [--transformer-model DIR] [--probe-model DIR]
                                                  [--threads N]

With ``--json`` the last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from bitextflow.catalog.models import model_cache_dir
from bitextflow.classify.data import read_labelled
from bitextflow.classify.model import load_model
from bitextflow.classify.offline import offline_set
from bitextflow.classify.training import prepare_split
from bitextflow.config import DomainTrainingConfig, load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.models.encoder import SentenceEncoder
from bitextflow.stages.train_domain import train_domain, with_training

ROOT = Path(__file__).resolve().parents[1]
PAIR = "en-es"


def sample_sentences(count: int) -> list[str]:
    """English and Spanish test-split sentences, alternating, cycled to `count`."""
    training = DomainTrainingConfig()
    english = prepare_split(read_labelled(offline_set("en")), training, "offline en").test
    spanish = read_labelled(offline_set("es"))[-len(english) :]
    mixed = [s.text for pair in zip(english, spanish, strict=False) for s in pair]
    return list(itertools.islice(itertools.cycle(mixed), count))


def model_folder(kind: str, given: Path | None) -> Path:
    """`given`, or the cached bench model of `kind`, trained here with the default settings when absent."""
    if given is not None:
        return given
    folder = model_cache_dir() / f"bench-{kind}"
    if not (folder / "bitextflow-domain.json").is_file():
        print(f"training the {kind} model (default domain.training settings) into {folder} ...", file=sys.stderr)
        config = with_training(load_pair_config(ROOT / "include" / "pairs" / f"{PAIR}.yaml"), kind=kind)
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:  # same file system: the move is atomic
            train_domain(config, None, out_dir=Path(scratch) / "model", publish=False)
            (Path(scratch) / "model").replace(folder)
    return folder


def sentences_per_second(predict, sentences: Sequence[str], whole_warm_up: bool = False) -> float:
    """Speed of the second call; the first warms up on 16 sentences, or on all where `whole_warm_up`
    (a GPU picks its kernels per batch shape on first use: timing that pass cut the bfloat16 figure to a quarter)."""
    predict(list(sentences if whole_warm_up else sentences[:16]))
    started = time.perf_counter()
    predict(list(sentences))
    return len(sentences) / (time.perf_counter() - started)


def precision_check(transformer, encoder: SentenceEncoder, sentences: Sequence[str]) -> dict:
    """float32 speeds, and how far the bfloat16 outputs of the GPU path are from float32 ones."""
    reduced, full = transformer.logits(sentences), transformer.logits(sentences, reduced_precision=False)
    probabilities = [torch.softmax(torch.as_tensor(x) / transformer.temperature, dim=-1) for x in (reduced, full)]
    embeddings = [encoder.encode(sentences, reduced_precision=flag) for flag in (True, False)]
    return {
        "label_agreement": round(float((reduced.argmax(1) == full.argmax(1)).mean()), 5),
        "max_probability_difference": round(float((probabilities[0] - probabilities[1]).abs().max()), 5),
        "min_embedding_cosine": round(float((embeddings[0] * embeddings[1]).sum(1).min()), 5),
        "float32_transformer_sentences_per_s": round(
            sentences_per_second(lambda texts: transformer.logits(texts, reduced_precision=False), sentences, True), 1
        ),
        "float32_encoder_sentences_per_s": round(
            sentences_per_second(lambda texts: encoder.encode(texts, reduced_precision=False), sentences, True), 1
        ),
    }


def bicleaner_speed(sentences: Sequence[str]) -> tuple[float | None, str]:
    """bicleaner-ai pairs per second through the score stage's own command, or None and why not."""
    from bitextflow.score import bicleaner

    problems = bicleaner.missing_parts(PAIR)
    if problems:
        return None, "; ".join(problems)
    pairs = list(zip(sentences[0::2], sentences[1::2], strict=False))
    with tempfile.TemporaryDirectory() as scratch:
        source, target = Path(scratch) / "in.tsv", Path(scratch) / "out.tsv"
        source.write_text(bicleaner.pairs_tsv(pairs), encoding="utf-8")
        started = time.perf_counter()
        bicleaner.run_scoring(bicleaner.score_arguments(bicleaner.model_dir(PAIR), "en", "es", str(source), str(target)))
        return len(pairs) / (time.perf_counter() - started), f"{len(pairs)} pairs, environment start included"


def summary(metadata: dict) -> dict:
    keep = ("sentences", "accuracy", "macro_precision", "macro_recall", "macro_f1", "per_class")
    return {name: {k: m[k] for k in keep if k in m} for name, m in metadata["metrics"].items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--sentences", type=int, default=1000, help="sentences in the timed sample (default 1000)")
    parser.add_argument("--svm-model", type=Path, help="SVM model folder (default: trained here once)")
    parser.add_argument("--transformer-model", type=Path, help="transformer model folder (default: trained here once)")
    parser.add_argument("--probe-model", type=Path, help="probe model folder (default: trained here once)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--no-bicleaner", action="store_true", help="do not time bicleaner-ai scoring")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("classify_throughput: --device cuda, but torch sees no GPU", file=sys.stderr)
        return 2
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        sentences = sample_sentences(args.sentences)
        svm, svm_metadata = load_model(model_folder("svm", args.svm_model), PAIR)
        transformer, transformer_metadata = load_model(model_folder("transformer", args.transformer_model), PAIR, device=device)
        probe, probe_metadata = load_model(model_folder("probe", args.probe_model), PAIR, device=device)
        on_gpu = device == "cuda"
        svm_speed = sentences_per_second(svm.predict_proba, sentences)
        transformer_speed = sentences_per_second(transformer.predict_proba, sentences, on_gpu)
        probe_speed = sentences_per_second(probe.predict_proba, sentences, on_gpu)
        encoder = SentenceEncoder.from_path(None, device=device)
        encoder_speed = sentences_per_second(encoder.encode, sentences, on_gpu)
        precision = precision_check(transformer, encoder, sentences) if on_gpu else None
        bicleaner_pairs, bicleaner_note = (None, "skipped (--no-bicleaner)") if args.no_bicleaner else bicleaner_speed(sentences)
    except BitextflowError as error:
        print(f"classify_throughput: {error}", file=sys.stderr)
        return 2
    result = {
        "device": device,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "torch_threads": torch.get_num_threads(),
        "sentences": len(sentences),
        "classify_sentences_per_s": round(transformer_speed, 1),
        "svm_sentences_per_s": round(svm_speed, 1),
        "transformer_sentences_per_s": round(transformer_speed, 1),
        "probe_sentences_per_s": round(probe_speed, 1),
        "encoder_sentences_per_s": round(encoder_speed, 1),
        "precision_check": precision,
        "bicleaner_pairs_per_s": round(bicleaner_pairs, 1) if bicleaner_pairs else None,
        "bicleaner_note": bicleaner_note,
        "metrics": {"svm": summary(svm_metadata), "transformer": summary(transformer_metadata), "probe": summary(probe_metadata)},
        "transformer_temperature": transformer_metadata["temperature"],
        "transformer_training_seconds": transformer_metadata.get("training_seconds"),
        "probe_temperature": probe_metadata["temperature"],
        "probe_c": probe_metadata.get("probe", {}).get("c"),
        "probe_training_seconds": probe_metadata.get("training_seconds"),
    }
    if not args.json:
        print(
            f"device {device}: svm {svm_speed:.0f} sentences/s, transformer {transformer_speed:.0f} sentences/s, "
            f"probe {probe_speed:.0f} sentences/s, encoder {encoder_speed:.0f} sentences/s"
        )
        if precision:
            print(f"  bfloat16 against float32: {precision}")
        for kind in ("svm", "transformer", "probe"):
            for split, metrics in result["metrics"][kind].items():
                print(f"  {kind:<11} {split:<9} accuracy {metrics['accuracy']:.3f}  macro F1 {metrics['macro_f1']:.3f}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
