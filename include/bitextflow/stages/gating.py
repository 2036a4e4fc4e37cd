"""Running a quality gate from a stage: suites validated, results and Data Docs stored, verdict enforced."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterable
from pathlib import Path

from bitextflow.quality import Check, GateReport, enforce, validate
from bitextflow.stages.base import RunContext
from bitextflow.storage.layout import data_docs_key

log = logging.getLogger(__name__)


def judge(ctx: RunContext, gate: str, checks: Iterable[Check]) -> list[GateReport]:
    """Run a gate's suites (a list, or a generator that builds each frame in turn), store each result and the Data
    Docs under ``gate/``; raise if a suite failed.

    Results and Data Docs are stored before the verdict so that a failed gate can be inspected.
    """
    with tempfile.TemporaryDirectory(prefix="bitextflow-gate-") as tmp:
        reports = validate(checks, data_docs_dir=Path(tmp), run_name=gate)
        ctx.store.put_tree(ctx.key("gate", f"data_docs/{gate}/"), Path(tmp))
    for report in reports:
        ctx.store.put_json(ctx.key("gate", f"{report.suite}.report.json"), report.to_dict())
        verdict = "passed" if report.success else "FAILED: " + "; ".join(report.failures)
        log.info("%s gate: %d expectations %s", report.suite, report.evaluated, verdict)
    log.info("Data Docs of the %s gate: %s", gate, ctx.store.uri(data_docs_key(ctx.config.pair, ctx.run_id, gate)))
    for report in reports:
        enforce(report)
    return reports
