"""The shipped config's path through align_sentences, score and classify: one encoding per stage on torch (the path
before the ``embed`` stage, still selectable with ``embed.shared: false`` and ``embed.runtime: torch``) against one
embedding per sentence on the fastest runtime of this CPU (``embed``, ``embed.runtime: auto``), on the same inputs in
one run.

Inputs: the local site's Debian Reference in English and Spanish, crawled, extracted and document-aligned once (the
inputs of bench/release_precision.py, which judges releases on its po4a block truth); each path then runs under a run
id of its own forked from those outputs, timed stage by stage, and its release is judged for precision (not timed).
``pairs_per_s``: the sentence pairs align_sentences gives, over the seconds of the path's stages (embed included);
``sentences_per_s``: the distinct sentences a path embeds, over its seconds of encoding.

The figures depend on the CPU (a CPU with AVX512-BF16 runs the torch path in bfloat16, one with AVX512-VNNI runs int8
faster than one with AVX2 alone): ``cpu`` names it. ``--no-native-bfloat16`` runs the torch path in float32, as it
runs on CPUs without AVX512-BF16 (most laptops and CI machines).

Usage, from the project root::

    .venv/bin/python bench/default_path.py [--json] [--no-native-bfloat16]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

from bitextflow.catalog.releases import ReleaseInfo, read_release_pairs
from bitextflow.config import load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.models import encoder as encoder_module
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow_local.localsite import Truth, build_site, serve
from bitextflow_local.localsite.block_truth import Judge, run_sentences
from machine import cpu_model
from release_precision import BUCKET, DEFAULT_PAIR, FIRST_OWN_STAGE, OVERRIDES, fork, pair_config_path, run_from, site_crawl

#: The two paths, as pair-config overrides of the shipped config.
PATHS = {
    "before": {"embed.shared": False, "embed.runtime": "torch"},
    "after": {"embed.shared": True, "embed.runtime": "auto"},
}
TIMED = ("embed", "align_sentences", "score", "classify")


class EncodingClock:
    """Counts the texts every SentenceEncoder of the process embeds, and the seconds that takes (:meth:`encode` stands
    for ``SentenceEncoder.encode``)."""

    def __init__(self) -> None:
        self.texts = 0
        self.seconds = 0.0
        original = encoder_module.SentenceEncoder.encode

        def encode(encoder: Any, texts: Sequence[str], *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(encoder, texts, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.texts += len(texts)

        self.encode = encode


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from bitextflow_local.services.seaweed import SeaweedServer

    site = build_site()
    truth = Truth.load(site.cache_dir)
    result: dict[str, Any] = {"cpu": cpu_model(), "native_bfloat16": not args.no_native_bfloat16}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-default-path-")))
        s3 = stack.enter_context(SeaweedServer(tmp / "s3", [BUCKET]))
        server = stack.enter_context(serve(site.docroot, port=0))
        if args.no_native_bfloat16:
            stack.enter_context(mock.patch("bitextflow.models.inference.native_bfloat16", lambda device: False))
        counting = EncodingClock()
        stack.enter_context(mock.patch.object(encoder_module.SentenceEncoder, "encode", counting.encode))
        store = ObjectStore(StorageSettings.from_env(s3.env()), BUCKET)
        languages = tuple(DEFAULT_PAIR.split("-"))
        reference_pages, crawl = site_crawl("reference", server.base_url, languages, languages)
        config = load_pair_config(pair_config_path(DEFAULT_PAIR)).with_overrides({**OVERRIDES, **crawl})
        shared = run_context(config, store, "shared")
        run_pipeline(shared, until="embed")
        judge = Judge(site.docroot, truth, run_sentences(shared))
        translated_blocks = judge.translated_blocks(config.source, config.target, reference_pages)
        for name, overrides in PATHS.items():
            encoder_module.shared_encoder.cache_clear()  # each path loads its own runtime, as a fresh worker would
            path = fork(store, shared, name, overrides)
            texts, encoding = counting.texts, counting.seconds
            first = "embed" if REGISTRY.get("embed").enabled(path.config) else FIRST_OWN_STAGE
            outputs = run_from(path, first, "release")
            seconds = {stage: outputs["seconds"][stage] for stage in TIMED if stage in outputs["seconds"]}
            aligned = sum(
                store.get_json(key)["kept"]
                for key in store.list_keys(path.key(FIRST_OWN_STAGE, ""))
                if key.endswith(".counts.json")
            )
            figures = judge.judge(read_release_pairs(store, ReleaseInfo(**outputs["release"]))).figures(translated_blocks)
            result[name] = {
                "pairs_per_s": round(aligned / sum(seconds.values()), 2),
                "sentence_pairs_aligned": aligned,
                "seconds": seconds,
                "texts_embedded": counting.texts - texts,
                "sentences_per_s": round((counting.texts - texts) / max(counting.seconds - encoding, 1e-9), 1),
                "precision": figures["precision"],
                "yield": figures["yield"],
                "released_pairs": figures["sentence_pairs"],
                "overrides": overrides,
            }
            print(f"{name:7} {result[name]['pairs_per_s']:8.2f} pairs/s  {seconds}  embedded {result[name]['texts_embedded']} "
                  f"texts ({result[name]['sentences_per_s']:.0f}/s)  precision {figures['precision']:.4f} yield {figures['yield']:.4f}",
                  file=sys.stderr, flush=True)  # fmt: skip
    result["speedup"] = round(result["after"]["pairs_per_s"] / result["before"]["pairs_per_s"], 2)
    result["precision"] = result["after"]["precision"]
    result["aligner"] = config.align.sentence_aligner
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument(
        "--no-native-bfloat16", action="store_true", help="run the torch path in float32, as on CPUs without AVX512-BF16"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        result = measure(args)
    except BitextflowError as error:
        print(f"default_path: {error}", file=sys.stderr)
        return 2
    print(f"cpu: {result['cpu']}; aligner {result['aligner']}")
    for name in PATHS:
        print(f"{name:7} {result[name]['pairs_per_s']:8.2f} pairs/s, precision {result[name]['precision']:.4f}")
    print(f"speedup {result['speedup']:.2f}x")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
