"""Fetch Debian packages into a cache folder with `apt-get download`, unpack them there with `dpkg -x`.

Debian's archive is a package registry, reachable where the open web is not, and its packages hold
human-written text in many languages: translated documentation, Bibles, message catalogs, licences.
That makes them an offline source of training data (:mod:`bitextflow.classify.offline`,
:mod:`bitextflow.score.training_data`) and the material of the local test site. Nothing is installed
on the system: `apt-get download` and `dpkg -x` only write inside the cache folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from bitextflow.errors import StageError

_EXTRACTION_MARKER = ".extracted-from"


@dataclass(frozen=True)
class FetchedPackage:
    """One downloaded and unpacked package; `version` feeds the site's rebuild stamp."""

    name: str
    version: str
    deb: Path
    root: Path


def fetch_packages(names: Sequence[str], cache_dir: Path) -> dict[str, FetchedPackage]:
    """Make every package available unpacked under `<cache_dir>/extracted/<name>/`.

    Packages whose .deb is already in `<cache_dir>/debs/` are neither downloaded nor unpacked again, so
    a second call costs a few file-system checks.
    """
    debs_dir = cache_dir / "debs"
    debs_dir.mkdir(parents=True, exist_ok=True)
    missing = [name for name in names if _cached_deb(debs_dir, name) is None]
    if missing:
        _download(missing, debs_dir)
    fetched: dict[str, FetchedPackage] = {}
    for name in names:
        deb = _cached_deb(debs_dir, name)
        if deb is None:
            raise StageError(
                f"apt-get reported success but left no {name}_*.deb in {debs_dir}; "
                f"download it by hand with `cd {debs_dir} && apt-get download {name}`"
            )
        version = unquote(deb.name.split("_")[1])
        fetched[name] = FetchedPackage(name, version, deb, _extract(deb, cache_dir / "extracted" / name))
    return fetched


def _cached_deb(debs_dir: Path, name: str) -> Path | None:
    """The .deb of `name` in the cache; Debian file names are `<name>_<version>_<arch>.deb`."""
    candidates = sorted(debs_dir.glob(f"{name}_*.deb"))
    return candidates[-1] if candidates else None


def _download(names: Sequence[str], debs_dir: Path) -> None:
    """Download with apt-get, refreshing the package index once when that is what stands in the way.

    A stale or empty index is the usual cause of failure (a fresh container has no lists; a superseded
    version is gone from the mirror), and `apt-get update` fixes both, but only root may run it.
    """
    if shutil.which("apt-get") is None:
        raise StageError(
            f"apt-get not found: the Debian packages {', '.join(names)} cannot be downloaded; "
            f"run on a Debian-based system or copy their .deb files into {debs_dir}"
        )
    failure = _apt_get_download(names, debs_dir)
    if failure is not None and os.geteuid() == 0:
        subprocess.run(["apt-get", "update"], capture_output=True, text=True, check=False)
        failure = _apt_get_download(names, debs_dir)
    if failure is not None:
        raise StageError(
            f"cannot download Debian package(s) {', '.join(names)} ({failure}); "
            f"fix: run `apt-get update` as root and check that a Debian mirror is reachable, "
            f"or copy the .deb files into {debs_dir}"
        )


def _apt_get_download(names: Sequence[str], debs_dir: Path) -> str | None:
    """Run one `apt-get download`; return apt's last error line, or None on success.

    It downloads into a scratch directory and moves the files afterwards, so that an interrupted
    download never leaves a truncated .deb that later calls would take as cached.
    """
    with tempfile.TemporaryDirectory(dir=debs_dir, prefix=".download-") as scratch:
        result = subprocess.run(["apt-get", "download", *names], cwd=scratch, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            errors = [line for line in result.stderr.splitlines() if line.startswith("E:")]
            return errors[-1] if errors else f"apt-get exited with status {result.returncode}"
        for deb in Path(scratch).glob("*.deb"):
            deb.replace(debs_dir / deb.name)
    return None


def _extract(deb: Path, target: Path) -> Path:
    """Unpack `deb` into `target` unless that exact .deb was unpacked there already.

    Unpacking happens beside the target and is renamed into place, so a half-unpacked tree is never
    mistaken for a complete one.
    """
    marker = target / _EXTRACTION_MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8") == deb.name:
        return target
    if shutil.which("dpkg") is None:
        raise StageError(f"dpkg not found: cannot unpack {deb}; run on a Debian-based system")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    result = subprocess.run(["dpkg", "-x", str(deb), str(staging)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "dpkg -x failed"
        raise StageError(f"cannot unpack {deb} ({reason}); delete the file and build again to re-download it")
    (staging / _EXTRACTION_MARKER).write_text(deb.name, encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
