"""Batched transformer inference on CPU or GPU: one place decides batch size, order and precision.

The sentence encoder (embedding alignment, mining) and the domain classifier both run a transformers
encoder over many short texts. What makes that fast differs by device:

- on a CPU the arithmetic dominates, and batches of 64 texts sorted by token length pad little;
- on a GPU a batch of 64 short sentences leaves the chip idle: the cost is per batch (kernel launches,
  padding, copying the result back), so batches are larger, and the matrix products run in bfloat16
  (``torch.autocast``), which Hopper and Ampere chips compute far faster than float32 (2.2x end to end
  on an H100). Outputs are returned as float32 either way. ``docs/gpu.md`` has the measured speeds and
  how far the bfloat16 outputs stray from float32 (``bench/classify_throughput.py`` on a GPU);
- a CPU with AVX512-BF16 or AMX also multiplies in bfloat16 (1.7x the float32 speed of the encoder on the 2-core
  development machine, embeddings at cosine 0.99998 or more from float32's); one without keeps float32.

Texts are tokenised once, up front (the fast tokenizers batch this in Rust, on every core unless
``TOKENIZERS_PARALLELISM=false``), then sorted by token count so that each batch pads to nearly its own
length; results come back in input order. On a GPU the tokenizer, not the chip, sets the pace.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np
import torch

from bitextflow.errors import StageError

#: Texts per batch: measured on the 2-core CPU and on an H100 (docs/benchmarks.md).
CPU_BATCH_SIZE = 64
GPU_BATCH_SIZE = 512


def default_device() -> torch.device:
    """The GPU when torch sees one, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def batch_size_for(device: torch.device) -> int:
    """Texts per batch on `device` (`CPU_BATCH_SIZE` or `GPU_BATCH_SIZE`)."""
    return GPU_BATCH_SIZE if device.type == "cuda" else CPU_BATCH_SIZE


def native_bfloat16(device: torch.device) -> bool:
    """Whether `device` multiplies bfloat16 matrices natively: a CUDA GPU, or a CPU with AVX512-BF16 or AMX tiles.

    Elsewhere autocast emulates bfloat16 and runs slower than float32. torch exposes the CPU's features only as
    private helpers, hence the lookups that fall back to "no".
    """
    if device.type == "cuda":
        return True
    features = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return device.type == "cpu" and any(getattr(torch.cpu, feature, lambda: False)() for feature in features)


def amx_tiles() -> bool:
    """Whether this CPU has AMX tiles (Intel Sapphire Rapids and later), on which torch's bfloat16 encoder outruns the
    int8 ONNX one (:func:`bitextflow.models.encoder.resolve_runtime`)."""
    return bool(getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)())


@contextlib.contextmanager
def inference_precision(device: torch.device, reduced: bool = True) -> Iterator[None]:
    """No autograd; bfloat16 matrix products where the device has them natively (:func:`native_bfloat16`) unless
    `reduced` is False (float32 throughout)."""
    with torch.inference_mode():
        if reduced and native_bfloat16(device):
            with torch.autocast(device.type, dtype=torch.bfloat16):
                yield
        else:
            yield


def length_sorted_batches(
    token_ids: Sequence[Sequence[int]], pad_id: int | None, batch_size: int, device: torch.device
) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
    """(positions in `token_ids`, model inputs on `device`) per batch, longest texts first.

    Padding is on the right, which suits every encoder-only model (positions count from the left).
    Built with numpy rather than ``tokenizer.pad``: that costs as much as the GPU's work (0.5 s against
    0.06 s for 20,000 sentences).
    """
    if pad_id is None:
        raise StageError("the model's tokenizer has no padding token; give its folder one (tokenizer.pad_token) to batch texts")
    lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
    order = np.argsort(-lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        positions = order[start : start + batch_size]
        batch_lengths = lengths[positions]
        ids = np.full((len(positions), int(batch_lengths[0])), pad_id, dtype=np.int64)
        for row, position in enumerate(positions):
            ids[row, : batch_lengths[row]] = token_ids[position]
        mask = np.arange(ids.shape[1]) < batch_lengths[:, None]
        inputs = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask.astype(np.int64))}
        yield positions, {name: tensor.to(device) for name, tensor in inputs.items()}
