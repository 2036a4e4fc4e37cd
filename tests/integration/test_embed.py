"""One embedding per sentence per run: ``embed`` embeds what the aligner sees once; the encoder aligner, the margin
scorer and the probe classifier read those vectors and never load an encoder of their own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bitextflow import records
from bitextflow.config import load_pair_config
from bitextflow.errors import StageError
from bitextflow.models.vectors import pair_vectors, text_hash, unpack
from bitextflow.stages.registry import REGISTRY, run_context, run_stage
from bitextflow.storage.tables import read_table, read_table_and_metadata, write_table
from tests.support import ROOT, write_partition_documents
from tests.support.texts import DOCUMENTATION

ENGLISH, SPANISH = (list(side) for side in zip(*(DOCUMENTATION[i] for i in (0, 1, 2, 5)), strict=True))


def sentences(doc: str, language: str, texts: list[str]) -> list[dict]:
    return [
        {"doc_id": doc, "url": f"http://site/{doc}", "language": language, "paragraph_index": 0, "paragraph_type": "text",
         "sentence_index": k, "text": text, "duplicate": False, "partition": 0}
        for k, text in enumerate(texts)
    ]  # fmt: skip


@pytest.fixture
def document_pairs_key(store) -> str:
    """One site partition with two translated pages (the second pair repeats a sentence: embedded once) and their
    document-pair shard, as align_documents leaves them."""
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    ctx = run_context(config, store, "manual__embed_once")
    rows = sentences("en1", "en", ENGLISH) + sentences("es1", "es", SPANISH)
    rows += sentences("en2", "en", ENGLISH[:2]) + sentences("es2", "es", SPANISH[:2])
    write_table(store, ctx.key("partitions", "part-00000.sentences.parquet"), pd.DataFrame(rows), records.SENTENCES)
    write_partition_documents(store, ctx.key("partitions", "part-00000.documents.parquet"), pd.DataFrame(rows))
    pairs = [
        records.DocumentPair(a, b, f"http://site/{a}", f"http://site/{b}", "url_tokens", 1.0)
        for a, b in (("en1", "es1"), ("en2", "es2"))
    ]
    return write_table(
        store, ctx.key("align_documents", "docpairs-part-00000-00000.parquet"), records.frame_of(pairs, records.DOCUMENT_PAIRS),
        records.DOCUMENT_PAIRS,
    )  # fmt: skip


def test_each_sentence_is_embedded_once_and_every_stage_after_reads_the_vectors(store, document_pairs_key, monkeypatch):
    from bitextflow.classify import inference, probe
    from bitextflow.stages import align_sentences, classify, embed, score

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides({"align.sentence_aligner": "hybrid-e5"})
    ctx = run_context(config, store, "manual__embed_once")
    assert [s.name for s in REGISTRY.run_stages(config)][5:9] == ["align_documents", "embed", "align_sentences", "score"]

    with pytest.raises(
        StageError, match=r"embeddings.parquet missing: .*run `bitextflow embed --pair en-es --run-id manual__embed_once` first"
    ):
        run_stage(ctx, REGISTRY.get("align_sentences"), [document_pairs_key])
    (passed,) = run_stage(ctx, REGISTRY.get("embed"), [document_pairs_key])
    assert passed == document_pairs_key, "embed passes the document pairs on"
    table, metadata = read_table_and_metadata(store, ctx.key("embed", "docpairs-part-00000-00000.embeddings.parquet"))
    assert sorted(table["text_hash"]) == sorted({text_hash(t) for t in ENGLISH + SPANISH}), "each distinct sentence, once"
    assert metadata["bitextflow.encoder_runtime"] in ("torch", "onnx-int8")
    counts = store.get_json(ctx.key("embed", "docpairs-part-00000-00000.counts.json"))
    assert counts == {"stage": "embed", "in": 12, "kept": 8, "dropped": {"repeated_text": 4}}

    def no_encoder(*_args, **_kwargs):
        raise AssertionError("a stage after embed loaded an encoder")

    for module in (align_sentences, score, embed):
        monkeypatch.setattr(module, "configured_encoder", no_encoder)
    monkeypatch.setattr(probe, "encoder_for", no_encoder)
    # the classifier this test loads binds no_encoder as its encoder loader: it must not stay in the process's cache
    # for the next test's monolingual stage, which embeds pages no sentence pair came from
    monkeypatch.setattr(inference, "_LOADED", {})

    (pairs_key,) = run_stage(ctx, REGISTRY.get("align_sentences"), [document_pairs_key])
    aligned = read_table(store, pairs_key)
    assert len(aligned) == 6 and aligned[["vector_a", "vector_b"]].notna().all(axis=None)
    vectors_a, vectors_b = pair_vectors(aligned)
    stored = dict(zip(table["text_hash"], unpack(list(table["vector"])), strict=True))
    assert np.array_equal(vectors_a[0], stored[text_hash(aligned["text_a"][0])]), "a 1-1 pair's side is its sentence's vector"
    assert (np.einsum("ij,ij->i", vectors_a, vectors_b) > 0.7).all(), "translations are near"

    (scored_key,) = run_stage(ctx, REGISTRY.get("score"), [pairs_key])
    scored = read_table(store, scored_key)
    assert scored["margin_score"].notna().all() and len(scored) >= 4
    (classified_key,) = run_stage(ctx, classify.Classify, [scored_key])
    classified = read_table(store, classified_key)
    assert classified["domain_probs_a"].str.contains("computing").all()
    assert "vector_a" not in classified.columns, "vectors stop at classify: nothing after it reads them"


def test_a_second_run_takes_its_vectors_from_the_machines_cache_and_stores_the_same_bytes(
    store, document_pairs_key, monkeypatch, tmp_path
):
    """What another run (here: another run id over the same shard) embedded on this machine is not encoded again, and
    ``embed.cache: false`` encodes everything."""
    from bitextflow.stages import embed

    monkeypatch.setenv("BITEXTFLOW_EMBEDDING_CACHE", str(tmp_path))
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    first = run_context(config, store, "manual__embed_once")
    run_stage(first, REGISTRY.get("embed"), [document_pairs_key])
    stored = store.get_bytes(first.key("embed", "docpairs-part-00000-00000.embeddings.parquet"))

    encoded: list[str] = []
    real_encoder = embed.configured_encoder(config)
    monkeypatch.setattr(real_encoder, "encode", lambda texts, **kwargs: encoded.extend(texts) or np.zeros((len(texts), 384)))
    for run_id, overrides, expected in (("manual__cached", {}, 0), ("manual__uncached", {"embed.cache": False}, 8)):
        ctx = run_context(config.with_overrides(overrides), store, run_id)
        key = ctx.key("align_documents", "docpairs-part-00000-00000.parquet")
        store.put_bytes(key, store.get_bytes(document_pairs_key))
        for name in ("part-00000.sentences.parquet", "part-00000.documents.parquet"):
            store.put_bytes(ctx.key("partitions", name), store.get_bytes(first.key("partitions", name)))
        run_stage(ctx, REGISTRY.get("embed"), [key])
        assert len(encoded) == expected, run_id
        if not expected:
            assert store.get_bytes(ctx.key("embed", "docpairs-part-00000-00000.embeddings.parquet")) == stored
