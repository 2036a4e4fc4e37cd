"""The full site's changelog pages: one English page per Debian changelog entry, in paged archives.

Changelogs, like news and blog archives, are a large one-language part of real project sites, and
their archives are paged (newest first, an "Older entries" link per page), which makes them deep:
the tenth page of an archive is ten links below its first. The entries are the real Debian changelogs
(`usr/share/doc/<package>/changelog.Debian.gz`, else `changelog.gz`) of the packages the site is
built from. `/changes/` lists the packages; `/changes/<source>/` is the newest page of its archive.
"""

from __future__ import annotations

import gzip
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bitextflow.errors import StageError

SITE_DIR = "changes"
ENTRIES_PER_PAGE = 10
# `source (version) distributions; urgency=...` opens an entry, ` -- Name <email>  date` closes it.
_HEADER = re.compile(r"^(\S+) \(([^)]+)\) [^;]*;.*$")
_TRAILER = re.compile(r"^ -- (.+?) <[^>]*>\s+(.+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9.+-]")


@dataclass(frozen=True)
class Entry:
    """One changelog entry: the release's source package and version, its change lines, who and when."""

    source: str
    version: str
    changes: tuple[str, ...]
    maintainer: str
    date: str

    @property
    def site_path(self) -> str:
        return f"{SITE_DIR}/{self.source}/{_UNSAFE.sub('_', self.version)}.html"


def changelog_file(package_root: Path, package: str) -> Path:
    """The package's Debian changelog."""
    doc = package_root / "usr/share/doc" / package
    for name in ("changelog.Debian.gz", "changelog.gz"):
        if (doc / name).is_file():
            return doc / name
    raise StageError(f"package {package} has no changelog in {doc}: choose another package for the full site's changelogs")


def parse(path: Path) -> list[Entry]:
    """The entries of a Debian changelog, newest first (its own order)."""
    entries: list[Entry] = []
    header: re.Match[str] | None = None
    lines: list[str] = []
    for line in gzip.decompress(path.read_bytes()).decode("utf-8", "replace").splitlines():
        if header is None:
            header = _HEADER.match(line)
            lines = []
            continue
        trailer = _TRAILER.match(line)
        if trailer is None:
            if line.strip():
                lines.append(line.strip())
            continue
        entries.append(Entry(header.group(1), header.group(2), tuple(lines), trailer.group(1), trailer.group(2).strip()))
        header = None
    return entries


def entry_body(entry: Entry) -> str:
    """Body of an entry's page."""
    items = "".join(f"<li>{html.escape(line.lstrip('*- '))}</li>\n" for line in entry.changes if line.lstrip("*- "))
    return (
        f"<h1>{html.escape(entry.source)} {html.escape(entry.version)}</h1>\n<ul>\n{items}</ul>\n"
        f"<p>{html.escape(entry.maintainer)}, {html.escape(entry.date)}</p>\n"
        f'<p><a href="/{SITE_DIR}/{entry.source}/">{html.escape(entry.source)}</a></p>\n'
    )


def archive_pages(source: str, entries: Sequence[Entry]) -> list[tuple[str, str]]:
    """(site path, body) of each page of a source's archive, newest first, each linking the next older."""
    pages = []
    chunks = [entries[start : start + ENTRIES_PER_PAGE] for start in range(0, len(entries), ENTRIES_PER_PAGE)]
    for number, chunk in enumerate(chunks, start=1):
        path = f"{SITE_DIR}/{source}/" + ("index.html" if number == 1 else f"page{number}.html")
        items = "".join(
            f'<li><a href="/{entry.site_path}">{html.escape(entry.version)}</a> {html.escape(entry.date)}</li>\n'
            for entry in chunk
        )
        older = f'<p><a href="/{SITE_DIR}/{source}/page{number + 1}.html">Older entries</a></p>\n' if number < len(chunks) else ""
        pages.append((path, f"<h1>Changes in {html.escape(source)}</h1>\n<ul>\n{items}</ul>\n{older}"))
    return pages
