"""Stage ``embed``: every sentence the aligner will see, embedded once for the run.

Three stages use sentence vectors: the encoder aligners (``vecalign``, ``hybrid-e5``), the margin scorer and a probe
domain classifier. Each used to embed what it needed, so a sentence went through the encoder up to three times. This
stage embeds the distinct sentences of each document-pair shard once (the sentences
:mod:`bitextflow.stages.document_sides` gives the aligner) and stores them beside the shard,
``embed/<shard>.embeddings.parquet`` (a 64-bit hash of each text and its float16 vector,
:mod:`bitextflow.models.vectors`; the encoder runtime in the file's metadata). ``align_sentences`` aligns with them and
hands each sentence pair its sides' vectors; ``score`` and ``classify`` read those.

It passes its input shards on unchanged (its ``outputs`` are the document-pair shards), so that ``align_sentences``
reads the same keys whether or not a run embeds: the stage is in a run when ``embed.shared`` is on and some stage of
the pair uses vectors (:meth:`Embed.enabled`). On Kubernetes (``gpu.mode``) it is one GPU step for every shard, the
model loaded once in a GPU pod, in batches of 512; in the worker it maps over the shards like the stages around it,
on whatever device and runtime the worker has (``embed.runtime``). A sentence the machine embedded before, in any run
of any pair, comes from its embedding cache (``embed.cache``, :mod:`bitextflow.models.embedding_cache`); the counts
do not say how many did, so that a run's outputs never depend on what the machine ran before.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from bitextflow import records
from bitextflow.align.aligners import NEEDS_ENCODER
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.models.embedding_cache import EmbeddingCache, encode_through_cache
from bitextflow.models.vectors import embeddings_frame
from bitextflow.settings import embedding_cache_dir
from bitextflow.stages.base import Resources, RunContext, Stage, shard_name
from bitextflow.stages.document_sides import pair_sentences
from bitextflow.storage.layout import DOCUMENT_PAIR_SHARDS, partition_of_key
from bitextflow.storage.tables import read_table, write_table

log = logging.getLogger(__name__)

#: The footer metadata entry that names the runtime the vectors of a file come from (the margin scorer's calibration
#: is per runtime).
RUNTIME_METADATA = "bitextflow.encoder_runtime"


def configured_encoder(config: PairConfig):
    """The pair's sentence encoder (``align.encoder_model`` on ``embed.runtime``), loaded once per process."""
    from bitextflow.models.encoder import shared_encoder  # torch: imported only where vectors are made

    return shared_encoder(Path(config.align.encoder_model) if config.align.encoder_model else None, None, config.embed.runtime)


def embedding_cache(config: PairConfig, encoder) -> EmbeddingCache | None:
    """This machine's embedding cache of ``encoder``'s vectors, where the pair's ``embed.cache`` uses one."""
    if not config.embed.cache:
        return None
    return EmbeddingCache(embedding_cache_dir(), encoder.identity(), int(config.embed.cache_max_gb * 1e9))


def uses_vectors(config: PairConfig) -> bool:
    """Whether some stage of the pair's runs uses sentence vectors: an encoder aligner, the margin scorer, a domain
    classifier (a probe reads them; other kinds ignore them)."""
    return (
        config.align.sentence_aligner in NEEDS_ENCODER or config.score.pair_scorer == "margin" or bool(config.domain.classifier)
    )


class Embed(Stage):
    name = "embed"
    after = "align_documents"
    outputs = DOCUMENT_PAIR_SHARDS
    output_folder = "align_documents"  # it passes the document-pair shards on; its vectors lie in its own folder
    partitioning = "shard"
    resources = Resources(concurrency=4)
    help = "embed each sentence the aligner sees, once, for the stages that use sentence vectors (embed.shared)"

    @classmethod
    def enabled(cls, config: PairConfig) -> bool:
        return config.embed.shared and uses_vectors(config)

    @classmethod
    def runs_on_gpu(cls, config: PairConfig) -> bool:
        return config.gpu.mode == "kubernetes"

    @staticmethod
    def embeddings_key(ctx: RunContext, document_pairs_key: str) -> str:
        """Where the vectors of a document-pair shard's sentences are."""
        return ctx.key("embed", f"{shard_name(document_pairs_key)}.embeddings.parquet")

    def setup(self) -> None:
        self.encoder = configured_encoder(self.ctx.config)
        log.info(
            "%s: encoder %s on %s, runtime %s", self.ctx.config.pair, self.encoder.path, self.encoder.device, self.encoder.runtime
        )
        self.cache = embedding_cache(self.ctx.config, self.encoder)

    def run(self, document_pairs_key: str) -> str:
        """Embeds the shard's distinct sentences (counted: every sentence seen, each distinct text kept once, the rest
        ``repeated_text``); returns the shard's key."""
        ctx = self.ctx
        doc_pairs = read_table(ctx.store, document_pairs_key)
        texts = [
            text.strip()
            for sides in pair_sentences(ctx, doc_pairs, partition_of_key(document_pairs_key))
            for text in (*sides.src, *sides.tgt)
        ]
        distinct = list(dict.fromkeys(texts))
        started = time.perf_counter()
        vectors, cached = encode_through_cache(self.encoder, distinct, self.cache)
        elapsed = time.perf_counter() - started
        log.info(
            "%s: %d sentences, %d of them from the embedding cache, %d encoded in %.1f s (%.0f a second)",
            shard_name(document_pairs_key), len(distinct), cached, len(distinct) - cached, elapsed,
            (len(distinct) - cached) / max(elapsed, 1e-9),
        )  # fmt: skip
        write_table(
            ctx.store, self.embeddings_key(ctx, document_pairs_key), embeddings_frame(distinct, vectors),
            records.SENTENCE_EMBEDDINGS, metadata={RUNTIME_METADATA: self.encoder.runtime},
        )  # fmt: skip
        counts = StageCounts(self.name)
        counts.seen(len(texts))
        counts.drop("repeated_text", len(texts) - len(distinct))
        counts.keep(len(distinct))
        ctx.write_counts(self.name, shard_name(document_pairs_key), counts)
        return document_pairs_key

    def output_key(self, document_pairs_key: str) -> str:
        """The shard's key once its vectors exist: a GPU step that ran elsewhere (a pod) wrote them, and sentence
        alignment must not start without them."""
        key = self.embeddings_key(self.ctx, document_pairs_key)
        if not self.ctx.store.exists(key):
            raise StageError(
                f"{self.ctx.store.uri(key)} missing: the embed step did not embed shard {shard_name(document_pairs_key)}; see its log"
            )
        return document_pairs_key
