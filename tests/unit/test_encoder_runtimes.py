"""The encoder's two runtimes: torch, and the int8 ONNX export for CPUs without AMX. The export is built once per model
folder (``bitextflow-local prepare`` builds the default's) and gives vectors next to torch's float32 ones."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from bitextflow.errors import StageError
from bitextflow.models.encoder import resolve_runtime, shared_encoder
from bitextflow.models.onnx_encoder import (
    STAMP_FILENAME,
    _is_current,
    ensure_exported,
    export_dir,
    outlier_layers,
    source_signature,
)
from tests.support import EVAL_DIR

TEXTS = [
    "Install the package with apt before you configure the network.",
    "Instale el paquete con apt antes de configurar la red.",
    "Le noyau démarre et monte le système de fichiers racine.",
    "Der Kernel startet und hängt das Wurzeldateisystem ein.",
    "Комитет одобрил новый бюджет во вторник.",
    "委员会周二批准了新预算。",
]


@pytest.fixture(scope="module")
def runtimes():
    return shared_encoder(None, "cpu", "torch"), shared_encoder(None, "cpu", "onnx-int8")


def test_auto_is_torch_on_a_gpu_and_on_amx_and_int8_onnx_on_other_cpus(monkeypatch):
    from bitextflow.models import encoder

    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    for amx, expected in ((False, "onnx-int8"), (True, "torch")):
        monkeypatch.setattr(encoder, "amx_tiles", lambda amx=amx: amx)
        assert resolve_runtime("auto", cpu) == expected
        assert resolve_runtime("auto", gpu) == "torch"
    assert resolve_runtime("torch", cpu) == "torch"
    with pytest.raises(StageError, match="onnx-int8 encoder runtime runs on the CPU, not cuda"):
        resolve_runtime("onnx-int8", gpu)
    with pytest.raises(StageError, match="unknown encoder runtime 'tensorrt'; choose one of auto, torch, onnx-int8"):
        resolve_runtime("tensorrt", cpu)


def test_int8_vectors_are_unit_length_in_input_order_and_next_to_torchs(runtimes):
    torch_encoder, int8_encoder = runtimes
    assert (torch_encoder.runtime, int8_encoder.runtime, int8_encoder.dim) == ("torch", "onnx-int8", 384)
    full = torch_encoder.encode(TEXTS, reduced_precision=False)
    int8 = int8_encoder.encode(TEXTS)
    assert int8.dtype == np.float32 and np.allclose(np.linalg.norm(int8, axis=1), 1, atol=1e-5)
    cosines = np.einsum("ij,ij->i", full, int8)
    print("cosine to torch float32:", np.round(cosines, 4))
    assert cosines.min() > 0.98 and cosines.mean() > 0.99
    np.testing.assert_allclose(int8_encoder.encode(TEXTS[::-1]), int8[::-1], atol=2e-3)
    assert int8_encoder.encode([]).shape == (0, 384)


def test_int8_mines_tatoeba_as_well_as_float32(runtimes):
    """The first 300 Spanish-English pairs of LASER's Tatoeba test set, both directions: the export costs no accuracy."""
    folder = EVAL_DIR / "tatoeba"
    if not folder.is_dir():
        pytest.skip(f"gold data {folder} is absent (it ships beside the repository in CI, not in a user's clone)")
    spanish = (folder / "tatoeba.spa-eng.spa").read_text(encoding="utf-8").splitlines()[:300]
    english = (folder / "tatoeba.spa-eng.eng").read_text(encoding="utf-8").splitlines()[:300]

    def error(encoder, **options) -> float:
        similarity = encoder.encode(spanish, **options) @ encoder.encode(english, **options).T
        truth = np.arange(len(spanish))
        return float(((similarity.argmax(1) != truth).mean() + (similarity.argmax(0) != truth).mean()) / 2)

    torch_encoder, int8_encoder = runtimes
    full, int8 = error(torch_encoder, reduced_precision=False), error(int8_encoder)
    print(f"Tatoeba spa-eng (300) error: float32 {full:.4f}, int8 {int8:.4f}")
    assert int8 <= full + 0.01


def test_the_export_is_built_once_per_model_folder_and_again_when_the_folder_changes(runtimes):
    model_dir = runtimes[0].path
    model_file = ensure_exported(model_dir)
    assert model_file.parent == export_dir(model_dir)
    built = model_file.stat().st_mtime_ns
    assert ensure_exported(model_dir) == model_file and model_file.stat().st_mtime_ns == built, "current: not built again"
    stamp = json.loads((model_file.parent / STAMP_FILENAME).read_text())
    assert stamp["source"] == source_signature(model_dir) and len(stamp["source_sha256"]) == 64
    assert not _is_current(model_file.parent, {**stamp["source"], "mtime_ns": 0}), "a rewritten weights file is exported again"


def test_layers_whose_feed_forward_activations_are_outliers_stay_float32():
    # multilingual-e5-small's maxima on the calibration sentences: layers 0, 4 and 5 carry the outliers
    maxima = [33.1, 13.9, 12.1, 6.7, 69.6, 32.0, 11.7, 11.3, 6.7, 5.4, 4.9, 1.0]
    assert outlier_layers(maxima) == [0, 4, 5]
    assert outlier_layers([5.0] * 12) == []


def test_the_export_keeps_exactly_the_outlier_layers_feed_forward_projections_in_float32(runtimes):
    import onnx

    model_file = ensure_exported(runtimes[0].path)
    stamp = json.loads((model_file.parent / STAMP_FILENAME).read_text())
    float_layers = stamp["float32_feed_forward_layers"]
    assert len(stamp["feed_forward_input_maxima"]) == 12 and float_layers == outlier_layers(stamp["feed_forward_input_maxima"])
    assert 0 < len(float_layers) < 12
    graph = onnx.load(str(model_file), load_external_data=False).graph
    float_products = sorted(node.name for node in graph.node if node.op_type == "MatMul" and "/attention/" not in node.name)
    assert float_products == sorted(f"/model/encoder/layer.{index}/output/dense/MatMul" for index in float_layers)
    quantized = [node for node in graph.node if node.op_type in ("DynamicQuantizeMatMul", "MatMulInteger")]
    assert len(quantized) == 12 * 6 - len(float_layers), "query, key, value, attention output, intermediate, output"


def test_weights_are_7_bit_on_an_x86_cpu_without_vnni_and_8_bit_elsewhere(monkeypatch, runtimes):
    """ONNX Runtime's 8-bit products saturate on AVX2 without VNNI: the export there quantizes weights to 7 bits, in a
    folder and an encoder identity of its own. The CPU features are set by monkeypatch: one machine has only one CPU."""
    import platform

    from bitextflow.models import onnx_encoder

    model_dir = runtimes[0].path
    stamp = json.loads((ensure_exported(model_dir).parent / STAMP_FILENAME).read_text())
    assert stamp["weight_bits"] == onnx_encoder.weight_bits()
    names = {}
    for machine, vnni, bits in (("x86_64", False, 7), ("x86_64", True, 8), ("aarch64", False, 8)):
        monkeypatch.setattr(platform, "machine", lambda machine=machine: machine)
        monkeypatch.setattr(torch.cpu, "_is_vnni_supported", lambda vnni=vnni: vnni, raising=False)
        assert onnx_encoder.weight_bits() == bits
        names[bits] = (export_dir(model_dir).name, onnx_encoder.export_variant())
    assert names[7][0] == names[8][0] + "-w7" and names[7][1] != names[8][1]
