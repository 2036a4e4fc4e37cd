"""The sentence encoder as an int8 ONNX model, for CPUs without native bfloat16 (most laptops and CI machines).

Why: on a CPU without AVX512-BF16 or AMX, torch runs the encoder in float32. ONNX Runtime with dynamically quantized
int8 matrix products (weights int8 per output channel, activations quantized per batch at run time) runs the same
model 2.3-2.5x faster than torch in float32 on a 2-core Intel Xeon with AVX512-VNNI; the gain depends on the CPU's
integer dot-product instructions (AVX2, AVX512-VNNI).
Measured figures: docs/benchmarks.md ("Encoder runtimes").

The graph is traced from the model's eager attention (``attn_implementation="eager"``): the SDPA attention's masking
(``Where``, ``IsNaN``) took a quarter of the int8 graph's time in ONNX Runtime, and the eager graph runs 1.3x faster.

What is quantized: every matrix product except the feed-forward output projection (``.../output/dense/MatMul``
outside the attention block) of the layers whose input carries outlier activations. The input of that projection,
the GELU output, holds the large outliers of BERT-family models in a few layers (Bondarenko et al. 2021,
"Understanding and Overcoming the Challenges of Efficient Transformer Quantization", EMNLP); quantized with one
scale per batch they cost bitext mining accuracy. The export measures each layer's largest input magnitude on
:data:`CALIBRATION_FILE` (26 sentences in six languages; the outliers are the model's, not the text's: 300 Tatoeba
sentences or 500 documentation sentences give the same maxima within 2%) and keeps in float32 the layers above
:data:`OUTLIER_FACTOR` times the median layer's. For multilingual-e5-small that is 3 of 12 layers (0, 4 and 5:
maxima 33, 70 and 32 against a median of 11.5). On Tatoeba's spa, fra, deu and rus tests (both directions, 1,000
sentences each) the mean error is 0.0715 with those three in float32, 0.0710 with all twelve (the previous
export) and 0.0734 with none, against torch float32's 0.0685; the encoder runs 1.2-1.6x faster than export version 1.
Weights are quantized per output channel, in 8 bits, or in 7 on an x86 CPU without VNNI (:func:`weight_bits`): there
ONNX Runtime multiplies unsigned 8-bit activations by signed 8-bit weights with AVX2's ``vpmaddubsw``, whose pairwise
sums saturate at 16 bits (ONNX Runtime's quantization guide advises ``reduce_range`` on such CPUs). On a 2-core AMD
EPYC with AVX2 only, the first 300 Tatoeba pairs of spa, fra, deu and rus (both directions) gave mining errors of
0.0383, 0.0683, 0.0250 and 0.0783 with 8-bit weights, 0.0333, 0.0617, 0.0283 and 0.0733 with 7-bit ones, against torch
float32's 0.0267, 0.0650, 0.0267 and 0.0733, at the same speed. The 7-bit export has a folder, a stamp and an encoder
identity of its own (:func:`export_variant`), so the embedding cache never mixes the two kinds of vectors.

The export wraps the model with the pooling of :class:`bitextflow.models.encoder.SentenceEncoder` (mask-weighted
mean, L2 norm), so the graph maps token ids to unit vectors. It is built once per model folder and cached beside the
other models (``<cache>/models/onnx/<folder name>-<fingerprint>/``), by ``bitextflow-local prepare`` or on first
use; a stamp records the source folder's weights (size and modification time, checked on every load, and their
SHA-256), the export's version and the layers kept in float32, so a changed folder is exported again.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bitextflow.errors import StageError
from bitextflow.hashing import file_sha256
from bitextflow.models.folders import built_in_place
from bitextflow.settings import cache_dir

log = logging.getLogger(__name__)

#: E5 was trained with "query: " / "passage: " in front of every input and embeds worse without one.
#: Its model card asks for "query: " on both sides of symmetric tasks (bitext mining, paraphrase,
#: similarity), which is what aligning two languages is; use "" for models trained without prefixes.
#: Defined here, under the encoder module, because the export measures its activations on prefixed inputs too.
E5_SYMMETRIC_PREFIX = "query: "
#: Bumped when the graph or the quantization recipe changes: older exports are rebuilt.
EXPORT_VERSION = 2
#: The sentences each layer's feed-forward output projection input is measured on (module docstring).
CALIBRATION_FILE = Path(__file__).with_name("calibration_sentences.txt")
#: A layer whose largest feed-forward activation exceeds this many times the median layer's stays float32.
OUTLIER_FACTOR = 2.0
MODEL_FILENAME = "encoder.int8.onnx"
STAMP_FILENAME = "bitextflow-onnx.json"
#: ONNX operator set of the export (ONNX Runtime 1.31 runs up to 23; 17 has every operator BERT needs).
OPSET = 17
#: The weights file a transformers folder keeps its tensors in.
WEIGHTS_FILENAMES = ("model.safetensors", "pytorch_model.bin")


def weights_file(model_dir: Path) -> Path:
    """The file that holds the weights of the transformers folder ``model_dir``."""
    for name in WEIGHTS_FILENAMES:
        if (model_dir / name).is_file():
            return model_dir / name
    raise StageError(f"model folder {model_dir} has no {' or '.join(WEIGHTS_FILENAMES)}; pass a transformers encoder folder")


def source_signature(model_dir: Path) -> dict[str, Any]:
    """What identifies the source cheaply on every load: its weights file's size and modification time."""
    weights = weights_file(model_dir)
    status = weights.stat()
    return {"weights": weights.name, "size": status.st_size, "mtime_ns": status.st_mtime_ns}


def weight_bits() -> int:
    """The bits of the int8 export's weights on this CPU: 7 on an x86 CPU without VNNI, where ONNX Runtime's 8-bit
    products saturate (module docstring), else 8."""
    import platform

    import torch

    x86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
    return 7 if x86 and not getattr(torch.cpu, "_is_vnni_supported", lambda: False)() else 8


def export_variant() -> str:
    """What names this CPU's export among the encoder's identities: :data:`EXPORT_VERSION`, and ``-w7`` for 7-bit
    weights."""
    return f"{EXPORT_VERSION}" if weight_bits() == 8 else f"{EXPORT_VERSION}-w7"


def export_dir(model_dir: Path) -> Path:
    """Where the int8 export of ``model_dir`` is cached: one folder per source folder (its name and path) and weight
    width."""
    import hashlib

    digest = hashlib.blake2b(str(model_dir.resolve()).encode("utf-8"), digest_size=6).hexdigest()
    width = "" if weight_bits() == 8 else "-w7"
    return cache_dir("models", "onnx", f"{model_dir.name}-{digest}{width}")


def _is_current(folder: Path, signature: dict[str, Any]) -> bool:
    try:
        stamp = json.loads((folder / STAMP_FILENAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        stamp.get("export_version") == EXPORT_VERSION
        and stamp.get("weight_bits", 8) == weight_bits()
        and stamp.get("source") == signature
        and (folder / MODEL_FILENAME).is_file()
    )


def ensure_exported(model_dir: Path) -> Path:
    """The int8 ONNX model of the transformers encoder folder ``model_dir``, exported and quantized when missing or
    outdated (about 30 s on 2 cores); returns the model file."""
    model_dir = Path(model_dir)
    signature = source_signature(model_dir)
    out_dir = export_dir(model_dir)
    if _is_current(out_dir, signature):
        return out_dir / MODEL_FILENAME
    started = time.perf_counter()
    log.info("exporting the encoder %s to ONNX int8 in %s (about 30 s; once per model folder)", model_dir, out_dir)
    with built_in_place(out_dir, lambda folder: _is_current(folder, signature)) as staging:
        float_model = staging / "encoder.float32.onnx"
        maxima = _export(model_dir, float_model)
        float_layers = outlier_layers(maxima)
        _quantize(float_model, staging / MODEL_FILENAME, float_layers, weight_bits())
        float_model.unlink()
        stamp = {
            "export_version": EXPORT_VERSION,
            "source": signature,
            "source_dir": str(model_dir),
            "source_sha256": file_sha256(weights_file(model_dir)),
            "opset": OPSET,
            "quantization": "dynamic int8, weights per channel, outlier layers' feed-forward output projections in float32",
            "weight_bits": weight_bits(),
            "feed_forward_input_maxima": [round(value, 2) for value in maxima],
            "float32_feed_forward_layers": float_layers,
            "seconds": round(time.perf_counter() - started, 1),
        }
        (staging / STAMP_FILENAME).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    log.info("encoder exported in %.0f s", time.perf_counter() - started)
    return out_dir / MODEL_FILENAME


def _export(model_dir: Path, out: Path) -> list[float]:
    """The encoder with mean pooling and L2 norm as one float32 ONNX graph: (input_ids, attention_mask) -> vectors.
    Returns each layer's largest feed-forward output projection input on :data:`CALIBRATION_FILE`."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    class Pooled(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return mean_pooled(hidden, attention_mask)

    model = AutoModel.from_pretrained(model_dir, local_files_only=True, attn_implementation="eager").eval()
    maxima = feed_forward_input_maxima(model, AutoTokenizer.from_pretrained(model_dir, local_files_only=True))
    example = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings(), torch.inference_mode():
        # the tracer's notes on Python branches of the attention code: the exported graph is checked by the tests
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(model), (example, example), str(out), input_names=["input_ids", "attention_mask"],
            output_names=["embedding"], opset_version=OPSET, dynamo=False,
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "embedding": {0: "batch"}},
        )  # fmt: skip
    return maxima


def feed_forward_input_maxima(model: Any, tokenizer: Any) -> list[float]:
    """The largest magnitude entering each layer's feed-forward output projection (``encoder.layer[i].output.dense``
    of a BERT-family model) over :data:`CALIBRATION_FILE`, with the E5 prefix the encoder gives every input."""
    import torch

    from bitextflow.models.inference import CPU_BATCH_SIZE, length_sorted_batches

    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if layers is None:
        raise StageError(f"{type(model).__name__} is not a BERT-family encoder (no encoder.layer); use the torch runtime for it")
    maxima = [0.0] * len(layers)

    def record(index: int) -> Any:
        def hook(module: Any, inputs: tuple[Any, ...]) -> None:
            maxima[index] = max(maxima[index], float(inputs[0].abs().max()))

        return hook

    texts = CALIBRATION_FILE.read_text(encoding="utf-8").splitlines()
    token_ids = tokenizer([E5_SYMMETRIC_PREFIX + text for text in texts], truncation=True, return_attention_mask=False)[
        "input_ids"
    ]
    handles = [layer.output.dense.register_forward_pre_hook(record(index)) for index, layer in enumerate(layers)]
    try:
        with torch.inference_mode():
            for _, inputs in length_sorted_batches(token_ids, tokenizer.pad_token_id, CPU_BATCH_SIZE, torch.device("cpu")):
                model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    return maxima


def outlier_layers(maxima: list[float]) -> list[int]:
    """The layers whose feed-forward activations exceed :data:`OUTLIER_FACTOR` times the median layer's."""
    median = float(np.median(maxima))
    return [index for index, value in enumerate(maxima) if value > OUTLIER_FACTOR * median]


def mean_pooled(hidden: Any, attention_mask: Any) -> Any:
    """E5's sentence vector: the mean of the token states under the attention mask, L2-normalised (torch tensors)."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
    return torch.nn.functional.normalize(mean, dim=-1)


def _quantize(float_model: Path, out: Path, float_layers: list[int], bits: int) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(float_model), load_external_data=False).graph
    kept_float = tuple(f"/layer.{index}/output/dense/MatMul" for index in float_layers)
    feed_forward_outputs = [
        node.name
        for node in graph.node
        if node.op_type == "MatMul" and node.name.endswith(kept_float) and "/attention/" not in node.name
    ]
    if len(feed_forward_outputs) != len(float_layers):
        raise StageError(
            f"the ONNX graph of {float_model} names its feed-forward projections unlike a BERT-family encoder "
            f"(found {feed_forward_outputs} for layers {float_layers}); use the torch runtime for this model"
        )
    quantize_dynamic(
        str(float_model), str(out), weight_type=QuantType.QInt8, per_channel=True, reduce_range=bits == 7,
        nodes_to_exclude=feed_forward_outputs,
        # the eager attention's shape arithmetic leaves some MatMul outputs untyped by ONNX shape inference
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )  # fmt: skip


class OnnxForward:
    """The exported encoder in an ONNX Runtime session: ``input_ids`` and ``attention_mask`` (int64 CPU tensors or
    arrays) -> unit vectors (float32).

    ``threads``: the session's intra-op threads (the encoder passes torch's setting, so both runtimes share a
    machine alike).
    """

    def __init__(self, model_file: Path, threads: int) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self.model_file = model_file

    def __call__(self, inputs: Mapping[str, Any]) -> np.ndarray:
        (vectors,) = self.session.run(None, {name: np.asarray(inputs[name]) for name in ("input_ids", "attention_mask")})
        return vectors
