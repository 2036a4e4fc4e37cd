"""The state of every pair, read from the object store alone (``bitextflow status``).

For each pair config: the last release (version, date, sentence pairs, gate result, whether its
registry tag exists), how many releases there are, and the last run (the run whose outputs were
written most recently): its per-stage counts, whether it was released, and every gate report of it
that failed, with the failing expectations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bitextflow.catalog.registry import registry_namespace, release_tag
from bitextflow.catalog.releases import MANIFEST_NAME, list_releases, release_prefix
from bitextflow.catalog.run_outputs import RunOutputs
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StorageError
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import run_prefix, text_of_key_part

MAX_FAILURES_SHOWN = 5


def _last_run(store: ObjectStore, pair: str) -> tuple[str, str] | None:
    """(run id, time of its last write) of the run of ``pair`` written most recently."""
    latest: dict[str, Any] = {}
    for key, modified in store.last_modified(f"{pair}/").items():
        try:
            run_id = text_of_key_part(key.split("/")[1])
        except StorageError:
            continue  # not written by a run (someone's own object under the pair's prefix)
        if run_id not in latest or modified > latest[run_id]:
            latest[run_id] = modified
    if not latest:
        return None
    run_id = max(latest, key=lambda r: (latest[r], r))
    return run_id, latest[run_id].strftime("%Y-%m-%dT%H:%M:%SZ")


def _failed_gates(store: ObjectStore, pair: str, run_id: str) -> list[dict[str, Any]]:
    failed = []
    for key in RunOutputs(store, pair, run_id).current(store.list_keys(run_prefix(pair, run_id))):
        if key.endswith("report.json"):
            report = store.get_json(key)
            if isinstance(report, dict) and report.get("success") is False:
                failures = list(report.get("failures", []))
                failed.append(
                    {
                        "report": key,
                        "suite": report.get("suite", key.split("/")[2]),
                        "failures": failures[:MAX_FAILURES_SHOWN],
                        "more_failures": max(0, len(failures) - MAX_FAILURES_SHOWN),
                    }
                )
    return failed


def collect_counts(store: ObjectStore, pair: str, run_id: str, stage_order: Sequence[str]) -> list[StageCounts]:
    """Counts of every stage of a run, merged per stage, in ``stage_order`` (stage names; a count whose
    stage starts with a name sorts with it, e.g. ``extract`` and ``extract_sentences``); the latest attempt's only
    (:class:`~bitextflow.catalog.run_outputs.RunOutputs`), not those of partitions or shards it no longer has."""
    by_stage: dict[str, list[StageCounts]] = {}
    for key in RunOutputs(store, pair, run_id).current(store.list_keys(run_prefix(pair, run_id))):
        if key.endswith(".counts.json"):
            part = StageCounts.from_dict(store.get_json(key))
            by_stage.setdefault(part.stage, []).append(part)

    def in_order(stage: str) -> tuple[int, str]:
        return next((i for i, name in enumerate(stage_order) if stage.startswith(name)), len(stage_order)), stage

    return [StageCounts.merged(stage, by_stage[stage]) for stage in sorted(by_stage, key=in_order)]


def pair_status(
    store: ObjectStore, config: PairConfig, stage_order: Sequence[str], registry_tags: Sequence[str] | None = None
) -> dict[str, Any]:
    """The state of one pair; ``registry_tags`` (the DVC registry's tags) marks which release is recorded;
    ``stage_order`` orders the last run's counts."""
    pair = config.pair
    releases = list_releases(store, pair)
    status: dict[str, Any] = {
        "pair": pair,
        "dag_id": config.dag_id,
        "releases": len(releases),
        "last_release": None,
        "last_run": None,
    }
    if releases:
        last = releases[-1]
        tag = release_tag(registry_namespace(config), pair, last.version)
        manifest = store.get_json(release_prefix(pair, last.version) + MANIFEST_NAME)
        status["last_release"] = {
            **last.to_dict(),
            "gate_success": manifest.get("gate_success"),
            "files": sorted(manifest.get("files", {})),
            "registry_tag": tag if registry_tags is not None and tag in registry_tags else None,
        }
    run = _last_run(store, pair)
    if run:
        run_id, updated = run
        counts = collect_counts(store, pair, run_id, stage_order)
        status["last_run"] = {
            "run_id": run_id,
            "updated": updated,
            "released_as": next((r.version for r in releases if r.run_id == run_id), None),
            "stage_counts": [c.to_dict() for c in counts],
            "failed_gates": _failed_gates(store, pair, run_id),
        }
    return status


def format_status(statuses: Sequence[dict[str, Any]]) -> str:
    """Plain-text view: one block per pair."""
    lines = []
    for status in statuses:
        lines.append(f"{status['pair']} ({status['dag_id']}): {status['releases']} release(s)")
        last = status["last_release"]
        if last:
            gate = {True: "passed", False: "FAILED", None: "none"}[last["gate_success"]]
            tag = f", registry tag {last['registry_tag']}" if last["registry_tag"] else ", not in the registry"
            lines.append(f"  last release v{last['version']} {last['created']}: {last['sentence_pairs']} pairs, gate {gate}{tag}")
            lines.append(f"    {last['uri']}")
        run = status["last_run"]
        if run:
            released = f"released as v{run['released_as']}" if run["released_as"] else "not released"
            lines.append(f"  last run {run['run_id']} ({run['updated']}): {released}")
            for counts in run["stage_counts"]:
                dropped = ", ".join(f"{r}={n}" for r, n in counts["dropped"].items()) or "-"
                lines.append(f"    {counts['stage']:<24} in={counts['in']:<8} kept={counts['kept']:<8} dropped: {dropped}")
            for gate in run["failed_gates"]:
                lines.append(f"  FAILED gate {gate['suite']} ({gate['report']}):")
                lines.extend(f"    {failure}" for failure in gate["failures"])
                if gate["more_failures"]:
                    lines.append(f"    ... {gate['more_failures']} more")
        if not last and not run:
            lines.append("  never run")
    return "\n".join(lines)
