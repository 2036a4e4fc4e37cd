"""Stage ``gate``: the run's sentence pairs, site partition by site partition, with repeats dropped (counted)
across the whole run, validated per partition and as a run.

Each partition's classified shards (and, in an ``incremental`` run, the pairs carried over from the last
release) are read in turn; a pair whose hash was already seen anywhere in the run is dropped
(``duplicate_pair``), as is a pair the deployment's takedown list names (``takedown_<kind>``), and personal
data in the pairs is replaced by placeholders or its pairs dropped (``personal_data_<type>``, docs/publishing.md),
so that nothing downstream (the release's files, an incremental run's carried pairs) holds either; the rest are
written to ``gate/part-NNNNN.sentence_pairs.parquet`` and judged by the partition's suite. The run-level suite judges the figures summed over the partitions: volume against the
pair's latest release (``gate.max_volume_drop`` / ``_growth``), shares of repeats and of sentences in another
language, document pairs. The task holds one partition's pairs and 8 bytes per pair of the run (the hashes
seen). A violation fails the run; the gated files are written first so they can be inspected.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

import pyarrow.parquet as pq

from bitextflow import records
from bitextflow.catalog.releases import list_releases
from bitextflow.catalog.run_outputs import RunOutputs, write_gated_outputs
from bitextflow.catalog.takedowns import read_takedowns
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.hashing import SeenHashes
from bitextflow.quality import Check, PairsSummary, run_sentence_pairs_check, sentence_pairs_check, with_helper_columns
from bitextflow.redaction import screen_for
from bitextflow.stages.base import Stage
from bitextflow.stages.gating import judge
from bitextflow.stages.monolingual import Monolingual
from bitextflow.storage.layout import GATED_PAIRS, RELEASED_DOCUMENT_PAIRS, partition_name, partition_of_key
from bitextflow.storage.tables import read_tables, write_table


class Gate(Stage):
    name = "gate"
    after = "monolingual"
    outputs = GATED_PAIRS
    partitioning = "run"
    gate = "sentence_pairs"
    asset = "sentence_pairs"
    help = "drop pairs repeated across the run, validate each site partition and the run (fails the run on a violation)"

    @classmethod
    def reads(cls, config: PairConfig) -> str | None:
        """The classified pairs, as the monolingual stage passes them on, or classify's own without it."""
        return cls.after if Monolingual.enabled(config) else Monolingual.after

    def run(self, classified_keys: Sequence[str]) -> list[str]:
        """Returns the gated pairs' keys, one per partition with pairs, in partition order."""
        shards: dict[int, list[str]] = defaultdict(list)
        for key in sorted(classified_keys):
            shards[partition_of_key(key)].append(key)
        gated: list[str] = []
        judge(self.ctx, "sentence_pairs", self._checks(shards, gated))
        return gated

    def _checks(self, shards: dict[int, list[str]], gated: list[str]) -> Iterator[Check]:
        """Each partition's suite as its pairs are merged and written (into ``gated``), then the run's."""
        ctx = self.ctx
        outputs = RunOutputs(ctx.store, ctx.config.pair, ctx.run_id)
        carried = self._carried_pairs(outputs)
        screen = screen_for(ctx.config, read_takedowns(ctx.store))
        counts = StageCounts("gate")
        seen = SeenHashes()
        summary = PairsSummary()
        for partition in sorted(shards.keys() | carried.keys()):
            frame = read_tables(
                ctx.store, [*shards.get(partition, []), *carried.get(partition, [])], records.CLASSIFIED_SENTENCE_PAIRS
            )
            counts.seen(len(frame))
            frame = screen.sentence_pairs(frame, counts)
            # 64 bits of the SHA-1: a collision in a run of a billion pairs has odds of about 3 in 100 million
            first = seen.add(
                int(pair_hash[:16], 16) if isinstance(pair_hash, str) and pair_hash else hash(pair_hash) % 2**64
                for pair_hash in frame["pair_hash"]
            )
            merged = frame[first].reset_index(drop=True)
            counts.drop("duplicate_pair", len(frame) - len(merged))
            counts.keep(len(merged))
            name = partition_name(partition)
            gated.append(
                write_table(
                    ctx.store, ctx.key("gate", f"{name}.sentence_pairs.parquet"), merged, records.CLASSIFIED_SENTENCE_PAIRS
                )
            )
            checked = with_helper_columns(merged)
            summary.add(checked)
            yield sentence_pairs_check(
                checked, ctx.config.gate, ctx.config.source, ctx.config.target, suite=f"sentence_pairs.{name}"
            )
        ctx.write_counts("gate", "gate", counts)
        write_gated_outputs(ctx.store, ctx.config.pair, ctx.run_id, gated)  # every partition's file is written
        previous = [r for r in list_releases(ctx.store, ctx.config.pair) if r.run_id != ctx.run_id]
        yield run_sentence_pairs_check(
            summary, ctx.config.gate, document_pairs=self._document_pairs(outputs),
            previous_count=previous[-1].sentence_pairs if previous else None,
        )  # fmt: skip

    def _carried_pairs(self, outputs: RunOutputs) -> dict[int, list[str]]:
        """In an ``incremental`` run, each partition's sentence pairs carried over from the last release (as its
        ``align_documents`` task wrote them in this attempt)."""
        if not self.ctx.config.incremental:
            return {}
        manifests = (outputs.partition(partition) for partition in sorted(outputs.partitions or ()))
        return {m.partition: [m.carried_sentence_pairs] for m in manifests if m is not None and m.carried_sentence_pairs}

    def _document_pairs(self, outputs: RunOutputs) -> int:
        """The run's document pairs (carried ones included), from the shards' footers."""
        ctx = self.ctx
        total = 0
        for key in outputs.document_pairs(ctx.outputs("align_documents", RELEASED_DOCUMENT_PAIRS)):
            with ctx.store.open_read(key, 1 << 16) as stream:
                total += pq.ParquetFile(stream).metadata.num_rows
        return total
