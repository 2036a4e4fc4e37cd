"""Stage ``release``: the gated pairs published as the pair's next version, then recorded in the DVC registry.

The release streams the run's site partitions into its files (pairs, document pairs, the monolingual corpus, the
crawl log for the report) one at a time (:mod:`bitextflow.release.build`). The built files pass the release gate
(:mod:`bitextflow.quality.release`) before anything is uploaded; files that fail it are kept under the run's
``gate/rejected_release/`` for inspection.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bitextflow.catalog.checkpoints import CrawlLog
from bitextflow.catalog.evaluations import prior_evaluation
from bitextflow.catalog.registry import registry_for
from bitextflow.catalog.releases import ReleaseInfo, next_version, publish_release
from bitextflow.catalog.run_outputs import RunOutputs
from bitextflow.catalog.status import collect_counts
from bitextflow.catalog.takedowns import read_takedowns
from bitextflow.counts import StageCounts
from bitextflow.errors import GateFailed, StageError
from bitextflow.quality import release_checks
from bitextflow.redaction import screen_for
from bitextflow.release.build import MONOLINGUAL_COLUMNS, ReleaseExtras
from bitextflow.release.profile import GateVerdict
from bitextflow.stages.base import RunContext, Stage
from bitextflow.stages.gating import judge
from bitextflow.stages.monolingual import Monolingual
from bitextflow.storage.layout import (
    ANNOTATED_DOCUMENT_SHARDS,
    GATE_REPORTS,
    RELEASED_DOCUMENT_PAIRS,
    SENTENCE_SHARDS,
    data_docs_path,
)
from bitextflow.storage.tables import StoredTables

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
        pairs, counts, run_id, report, extras = release_inputs(ctx, gated_keys)

        def release_gate(directory: Path, version: int) -> None:
            sentence_pairs = json.loads((directory / "stats.json").read_text(encoding="utf-8"))["sentence_pairs"]
            detector = extras.screen.detector if extras.screen else None
            try:
                judge(ctx, "release", release_checks(directory, ctx.config.pair, sentence_pairs, detector=detector))
            except GateFailed:
                ctx.store.put_tree(ctx.key("gate", "rejected_release/"), directory)
                log.error(
                    "release v%d failed its gate; its files are at %s",
                    version,
                    ctx.store.uri(ctx.key("gate", "rejected_release/")),
                )
                raise

        info: ReleaseInfo = publish_release(
            ctx.store, ctx.config.pair, pairs, counts, run_id, report, extras, verify=release_gate
        )
        log.info("released %s: %d sentence pairs", info.uri, info.sentence_pairs)
        result = info.to_dict()
        if ctx.config.release.record_in_registry:
            try:
                entry = registry_for(ctx.config, ctx.store.settings).record(ctx.store, info)
            except StageError as exc:
                raise StageError(
                    f"release v{info.version} of {info.pair} is published at {info.uri} but not recorded in the DVC "
                    f"registry: {exc}; once fixed, record it with `{record_command(ctx, info)}`"
                ) from None
            log.info("recorded in the DVC registry: %s", entry.get_command)
            result["registry"] = entry.to_dict()
        return result


def record_command(ctx: RunContext, info: ReleaseInfo) -> str:
    """The command that records a published release in the registry, with the bucket, remote and namespace of this run
    (an operator's ``--set`` may have changed them from the YAML's; a registry URL may hold a token: not repeated)."""
    release = ctx.config.release
    settings = {
        "storage.bucket": ctx.config.storage.bucket,
        "release.dvc_remote": release.dvc_remote,
        "release.namespace": release.namespace,
    }
    options = "".join(f" --set {name}={value}" for name, value in settings.items() if value)
    return f"bitextflow releases record --pair {info.pair} --version {info.version}{options}"


def release_extras(ctx: RunContext) -> ReleaseExtras:
    """The run's outputs a release is made of besides the gated pairs, each read a partition at a time: document
    pairs, the monolingual corpus (sentences of the documents extraction kept, i.e. in the pair's languages and
    domain), the annotated documents (the ``monolingual`` stage's, unless ``mono.enabled`` is off) and the crawl log
    (absent when the run ingested WARCs); the monolingual corpus, the documents and the document pairs pass the
    takedown list and the personal-data guard as the gate's pairs did. Only what the run's latest attempt wrote
    (:class:`~bitextflow.catalog.run_outputs.RunOutputs`): a run cleared and run again with other partitions leaves
    the earlier attempt's files beside them."""
    outputs = RunOutputs(ctx.store, ctx.config.pair, ctx.run_id)
    document_pairs = StoredTables(ctx.store, outputs.document_pairs(ctx.outputs("align_documents", RELEASED_DOCUMENT_PAIRS)))
    sentences = StoredTables(ctx.store, outputs.current(ctx.outputs("partitions", SENTENCE_SHARDS)), MONOLINGUAL_COLUMNS)
    crawl = CrawlLog(ctx.store, ctx.config.pair, ctx.run_id)
    screen = screen_for(ctx.config, read_takedowns(ctx.store))
    documents = None
    if Monolingual.enabled(ctx.config):
        documents = StoredTables(ctx.store, outputs.current(ctx.outputs("monolingual", ANNOTATED_DOCUMENT_SHARDS)))
    # a rebuild (`bitextflow releases build`) cites the labels its release cited when it was published
    version, published = next_version(ctx.store, ctx.config.pair, ctx.run_id)
    evaluation = prior_evaluation(ctx.store, ctx.config.pair, version, published["created"] if published else None)
    return ReleaseExtras(
        document_pairs,
        sentences,
        crawl,
        ctx.config,
        gate_verdicts(ctx, outputs),
        screen,
        documents=documents,
        evaluation=evaluation,
    )


def gate_verdicts(ctx: RunContext, outputs: RunOutputs) -> list[GateVerdict]:
    """What the run's gates said, from their reports (``gate/<suite>.report.json``, the latest attempt's): one
    verdict per gate, the document-pair suites of every partition together (their Data Docs: the first failing
    partition's, else the first partition's)."""
    suites: dict[str, list[dict[str, Any]]] = {}
    for key in outputs.current(ctx.outputs("gate", GATE_REPORTS)):
        report = ctx.store.get_json(key)
        suite = str(report.get("suite", ""))
        gate = "sentence_pairs" if suite.startswith("sentence_pairs") else suite.split(".")[0].replace("sentences", "documents")
        if gate in ("documents", "document_pairs", "sentence_pairs"):
            suites.setdefault(gate, []).append(report)
    verdicts = []
    for gate, reports in suites.items():
        failed = [report for report in reports if not report.get("success")]
        site = (failed or reports)[0]["suite"] if gate == "document_pairs" else gate
        verdicts.append(
            GateVerdict(
                gate,
                len(reports),
                tuple((report["suite"], tuple(report.get("failures", []))) for report in failed),
                data_docs_path(ctx.config.storage.bucket, ctx.config.pair, ctx.run_id, site),
            )
        )
    return verdicts


def release_inputs(
    ctx: RunContext, gated_keys: Sequence[str]
) -> tuple[StoredTables, list[StageCounts], str, dict[str, Any], ReleaseExtras]:
    """Everything a release of the run is built from, in :func:`~bitextflow.catalog.releases.publish_release`'s
    argument order after the pair: pairs, counts, run id, gate report, extras (``releases build`` reuses it)."""
    report = ctx.store.get_json(ctx.key("gate", "sentence_pairs.report.json"))
    counts = collect_counts(ctx.store, ctx.config.pair, ctx.run_id, ctx.stage_order)
    return StoredTables(ctx.store, sorted(gated_keys)), counts, ctx.run_id, report, release_extras(ctx)
