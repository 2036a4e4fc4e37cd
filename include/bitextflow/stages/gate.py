"""Stage ``gate``: the run's sentence pairs merged, exact duplicates dropped (counted), validated.

The volume is judged against the pair's latest release (``gate.max_volume_drop`` / ``_growth``). In an
``incremental`` run the pairs carried over from that release join this run's before anything is judged.
A violation fails the run; the merged candidate is written first so it can be inspected.
"""

from __future__ import annotations

from collections.abc import Sequence

from bitextflow import records
from bitextflow.catalog.releases import list_releases
from bitextflow.counts import StageCounts
from bitextflow.quality import sentence_pairs_check
from bitextflow.stages.base import Stage
from bitextflow.stages.gating import judge
from bitextflow.storage.layout import CARRIED_SENTENCE_PAIRS, GATED_PAIRS
from bitextflow.storage.tables import read_tables, write_table


class Gate(Stage):
    name = "gate"
    after = "classify"
    outputs = GATED_PAIRS
    partitioning = "run"
    gate = "sentence_pairs"
    asset = "sentence_pairs"
    help = "merge the shards, drop duplicate pairs, validate (fails the run on a violation)"

    def run(self, classified_keys: Sequence[str]) -> str:
        ctx = self.ctx
        carried_key = ctx.key("align_documents", CARRIED_SENTENCE_PAIRS)
        carried = [carried_key] if ctx.config.incremental and ctx.store.exists(carried_key) else []
        frame = read_tables(ctx.store, [*classified_keys, *carried], records.CLASSIFIED_SENTENCE_PAIRS)
        counts = StageCounts("gate")
        counts.seen(len(frame))
        merged = frame.drop_duplicates("pair_hash", keep="first").reset_index(drop=True)
        counts.drop("duplicate_pair", len(frame) - len(merged))
        counts.keep(len(merged))
        ctx.write_counts("gate", "gate", counts)
        key = write_table(ctx.store, ctx.key("gate", "sentence_pairs.parquet"), merged, records.CLASSIFIED_SENTENCE_PAIRS)
        previous = [r for r in list_releases(ctx.store, ctx.config.pair) if r.run_id != ctx.run_id]
        previous_count = previous[-1].sentence_pairs if previous else None
        check = sentence_pairs_check(merged, ctx.config.gate, ctx.config.source, ctx.config.target, previous_count=previous_count)
        judge(ctx, "sentence_pairs", [check])
        return key
