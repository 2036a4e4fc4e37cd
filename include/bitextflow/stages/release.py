"""Stage ``release``: the gated pairs published as the pair's next version, then recorded in the DVC registry.

The built files pass the release gate (:mod:`bitextflow.quality.release`) before anything is uploaded;
files that fail it are kept under the run's ``gate/rejected_release/`` for inspection.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bitextflow import records
from bitextflow.catalog.checkpoints import crawl_log
from bitextflow.catalog.registry import registry_for
from bitextflow.catalog.releases import ReleaseInfo, publish_release
from bitextflow.catalog.status import collect_counts
from bitextflow.counts import StageCounts
from bitextflow.errors import GateFailed
from bitextflow.quality import release_checks
from bitextflow.release.build import ReleaseExtras, monolingual_corpus
from bitextflow.stages.base import RunContext, Stage
from bitextflow.stages.gating import judge
from bitextflow.storage.layout import RELEASED_DOCUMENT_PAIRS, SENTENCE_SHARDS
from bitextflow.storage.tables import read_table, read_tables

log = logging.getLogger(__name__)


class Release(Stage):
    name = "release"
    after = "gate"
    partitioning = "run"
    gate = "release"
    asset = "release"
    help = "publish the gated pairs as releases/<pair>/v<N>/ and record it in the DVC registry"

    def run(self, gated_keys: Sequence[str]) -> dict[str, Any]:
        """Returns the release and, when recorded, its registry entry."""
        ctx = self.ctx
        df, counts, run_id, report, extras = release_inputs(ctx, gated_keys[0])

        def release_gate(directory: Path, version: int) -> None:
            try:
                judge(ctx, "release", release_checks(directory, ctx.config.pair, len(df)))
            except GateFailed:
                ctx.store.put_tree(ctx.key("gate", "rejected_release/"), directory)
                log.error(
                    "release v%d failed its gate; its files are at %s",
                    version,
                    ctx.store.uri(ctx.key("gate", "rejected_release/")),
                )
                raise

        info: ReleaseInfo = publish_release(ctx.store, ctx.config.pair, df, counts, run_id, report, extras, verify=release_gate)
        log.info("released %s: %d sentence pairs", info.uri, info.sentence_pairs)
        result = info.to_dict()
        if ctx.config.release.record_in_registry:
            entry = registry_for(ctx.config, ctx.store.settings).record(ctx.store, info)
            log.info("recorded in the DVC registry: %s", entry.get_command)
            result["registry"] = entry.to_dict()
        return result


def release_extras(ctx: RunContext) -> ReleaseExtras:
    """The run's outputs a release is made of besides the gated pairs: document pairs, the monolingual
    corpus (sentences of the documents extraction kept, i.e. in the pair's languages and domain) and the
    crawl log (absent when the run ingested WARCs)."""
    document_pairs = read_tables(ctx.store, ctx.outputs("align_documents", RELEASED_DOCUMENT_PAIRS), records.DOCUMENT_PAIRS)
    monolingual, counts = monolingual_corpus(
        read_tables(ctx.store, ctx.outputs("extract", SENTENCE_SHARDS), records.SENTENCES), [ctx.config.source, ctx.config.target]
    )
    lines = crawl_log(ctx.store, ctx.config.pair, ctx.run_id)
    return ReleaseExtras(document_pairs, monolingual, counts, lines, ctx.config)


def release_inputs(ctx: RunContext, gated_key: str) -> tuple[pd.DataFrame, list[StageCounts], str, dict[str, Any], ReleaseExtras]:
    """Everything a release of the run is built from, in :func:`~bitextflow.catalog.releases.publish_release`'s
    argument order after the pair: pairs, counts, run id, gate report, extras (``releases build`` reuses it)."""
    report = ctx.store.get_json(ctx.key("gate", "sentence_pairs.report.json"))
    counts = collect_counts(ctx.store, ctx.config.pair, ctx.run_id, ctx.stage_order)
    return read_table(ctx.store, gated_key), counts, ctx.run_id, report, release_extras(ctx)
