"""Validate a published release end to end: files, formats, counts, registry.

Reads the latest release of ``--pair`` (or ``--version``) from the object store, downloads every file
its manifest lists, and checks:

- ``manifest``: each file's size and SHA-256 match the manifest;
- ``tmx_valid``: the TMX is well-formed XML and valid against the TMX 1.4 DTD;
- ``counts_consistent``: sentence pairs in TMX (``<tu>``), TSV (lines), JSONL (lines), ``stats.json``
  and the manifest are equal, the document pairs' yields add up to it, and ``mono.<lang>.txt`` line
  counts equal the statistics (the release gate's own count, :func:`bitextflow.quality.release.release_file_counts`);
- ``report_present``: ``report.html`` with at least one embedded plot; ``datasheet_present``:
  ``datasheet.md`` with its licence section;
- ``gate_passed``: ``gate.json`` says the sentence-pair gate succeeded, and the run's release gate
  reports (``release_files``, ``release_pairs``, ``release_documents.<lang>``) say it passed; ``data_docs_present``: the run's Great
  Expectations Data Docs (HTML) are in the store;
- ``dvc_get``: ``dvc get <registry> releases/<pair>/v<N> --rev <pair>-v<N>`` returns exactly the
  manifest's files (data from the DVC remote on S3).

Usage, from the project root, with the S3 settings of the environment or ``.local/services.env``::

    .venv/bin/python bench/release_check.py --pair en-es [--version N] [--json]

Exit status 0 when every check passes, 1 when one fails, 2 when there is no release to check.
With ``--json`` the last line of output is one JSON object (see ../shared/BENCH.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bitextflow.catalog.registry import registry_for, release_path, release_tag
from bitextflow.catalog.releases import MANIFEST_NAME, list_releases, release_prefix
from bitextflow.config import load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.quality.release import PROBLEM_COLUMN, RELEASE_DOCUMENTS_SUITE, RELEASE_SUITES, release_file_counts
from bitextflow.release.formats import validate_tmx
from bitextflow.settings import load_services_env, project_home
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import run_prefix, stage_key


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_release(pair: str, version: int | None) -> dict[str, Any]:
    config = load_pair_config(project_home() / "include" / "pairs" / f"{pair}.yaml")
    store = ObjectStore.from_env(config.storage.bucket)
    releases = {info.version: info for info in list_releases(store, pair)}
    version = version or max(releases, default=0)
    if version not in releases:
        raise BitextflowError(f"{pair} has no release v{version} in bucket {config.storage.bucket!r}; run the pair's DAG first")
    release = releases[version]
    prefix = release_prefix(pair, version)
    manifest = store.get_json(prefix + MANIFEST_NAME)
    checks: dict[str, bool] = {}
    problems: dict[str, str] = {}
    counts: dict[str, Any] = {"manifest": manifest["sentence_pairs"]}
    timings: dict[str, float] = {}

    def check(name: str, test: Callable[[], bool]) -> None:
        started = time.perf_counter()
        try:
            checks[name] = bool(test())
        except (BitextflowError, OSError, ValueError, KeyError) as exc:
            checks[name], problems[name] = False, " ".join(str(exc).split())[:300]
        timings[name] = round(time.perf_counter() - started, 2)

    with tempfile.TemporaryDirectory(prefix="release-check-") as tmp:
        folder = Path(tmp) / "release"
        folder.mkdir()
        files = {name: store.download_file(prefix + name, folder / name) for name in manifest["files"]}

        def manifest_matches() -> bool:
            return all(
                path.stat().st_size == manifest["files"][name]["size"] and sha256(path) == manifest["files"][name]["sha256"]
                for name, path in files.items()
            )

        def tmx_valid() -> bool:
            counts["tmx"] = validate_tmx(files[f"{pair}.tmx"])
            return True

        def counts_consistent() -> bool:
            table = release_file_counts(folder, pair, manifest["sentence_pairs"])
            counts.update({row.file: row.records for row in table.itertuples() if row.expected is not None})
            problems_found = [p for p in table[PROBLEM_COLUMN] if p is not None]
            if problems_found:
                raise ValueError("; ".join(problems_found))
            return True

        def report_present() -> bool:
            return "data:image/png;base64," in files["report.html"].read_text(encoding="utf-8")

        def datasheet_present() -> bool:
            return "## Licences" in files["datasheet.md"].read_text(encoding="utf-8")

        def gate_passed() -> bool:
            documents = [f"{RELEASE_DOCUMENTS_SUITE}.{name.split('.')[1]}" for name in files if name.startswith("documents.")]
            release_gates = [
                store.get_json(stage_key(pair, release.run_id, "gate", f"{suite}.report.json"))
                for suite in (*RELEASE_SUITES, *documents)
            ]
            return json.loads(files["gate.json"].read_text()).get("success") is True and all(r["success"] for r in release_gates)

        def data_docs_present() -> bool:
            return any("data_docs/" in key and key.endswith(".html") for key in store.iter_keys(run_prefix(pair, release.run_id)))

        registry = registry_for(config, store.settings)

        def dvc_get() -> bool:
            got = registry.get(
                release_path(registry.namespace, pair, version),
                release_tag(registry.namespace, pair, version),
                Path(tmp) / "dvc-get",
            )
            return {p.name: sha256(p) for p in got.iterdir() if p.name != MANIFEST_NAME} == {
                name: entry["sha256"] for name, entry in manifest["files"].items()
            }

        check("manifest", manifest_matches)
        check("tmx_valid", tmx_valid)
        check("counts_consistent", counts_consistent)
        check("report_present", report_present)
        check("datasheet_present", datasheet_present)
        check("gate_passed", gate_passed)
        check("data_docs_present", data_docs_present)
        check("dvc_get", dvc_get)

    return {
        "ok": all(checks.values()),
        "pair": pair,
        "version": version,
        "sentence_pairs": release.sentence_pairs,
        "uri": release.uri,
        "checks": checks,
        "problems": problems,
        "counts": counts,
        "files": sorted(manifest["files"]),
        "registry": registry.shown_location,
        "dvc_get": f"dvc get {registry.shown_location} {release_path(registry.namespace, pair, version)} "
        f"--rev {release_tag(registry.namespace, pair, version)}",
        "seconds": timings,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pair", default="en-es", help="language pair (include/pairs/<pair>.yaml)")
    parser.add_argument("--version", type=int, help="release version (default: the latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    load_services_env()
    try:
        result = check_release(args.pair, args.version)
    except BitextflowError as exc:
        print(f"release_check: {exc}", file=sys.stderr)
        return 2
    print(f"{result['pair']} v{result['version']}: {result['sentence_pairs']} sentence pairs, {result['uri']}")
    for name, passed in result["checks"].items():
        problem = f"  ({result['problems'][name]})" if name in result["problems"] else ""
        print(f"  {'ok  ' if passed else 'FAIL'} {name:<18} {result['seconds'][name]:>6.2f} s{problem}")
    print(f"  counts: {json.dumps(result['counts'])}")
    print(f"  {result['dvc_get']}")
    if args.json:
        print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
