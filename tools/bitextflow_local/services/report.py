"""`bitextflow-local report`: a release's HTML report, saved where a browser opens it.

A release's ``report.html`` is one self-contained file (its plots are embedded), but it lives in S3 behind the
deployment's credentials, which a browser does not hold, and the Airflow UI links to Data Docs only. So it is
copied to ``.local/reports/<pair>-v<N>.html`` and opened from there (the ``file://`` URI printed): no signed URL
carries a key id into a terminal or a browser history, and the copy stays readable after ``make stop``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bitextflow.catalog.releases import ReleaseInfo, list_releases, release_prefix
from bitextflow.config import load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.settings import load_services_env, local_state_dir, pairs_dir
from bitextflow.storage import ObjectStore

REPORT_NAME = "report.html"


def reports_dir() -> Path:
    return local_state_dir() / "reports"


def save_report(store: ObjectStore, release: ReleaseInfo) -> Path:
    """``release``'s report, downloaded into :func:`reports_dir` (again each time: a rebuilt release replaces it)."""
    folder = reports_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return store.download_file(
        release_prefix(release.pair, release.version) + REPORT_NAME, folder / f"{release.pair}-v{release.version}.html"
    )


def main(pair: str, version: int | None) -> int:
    """Save the report of ``pair``'s release ``version`` (default: the latest) and print its ``file://`` URI."""
    load_services_env()
    try:
        config = load_pair_config(pairs_dir() / f"{pair}.yaml")
        store = ObjectStore.from_env(config.storage.bucket)
        releases = {info.version: info for info in list_releases(store, pair)}
        if not releases:
            raise BitextflowError(f"{pair} has no release yet; run its DAG (`make demo` for en-es) first")
        chosen = version or max(releases)
        if chosen not in releases:
            raise BitextflowError(f"{pair} has no release v{chosen}; see `bitextflow releases list --pair {pair}`")
        path = save_report(store, releases[chosen])
    except BitextflowError as error:
        print(f"bitextflow-local report: error: {error}", file=sys.stderr)
        return 1
    print(path.resolve().as_uri())
    return 0
