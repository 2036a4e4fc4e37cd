"""Releases: corpus files (TSV, TMX, JSONL, monolingual text, statistics, report, datasheet) published as
numbered versions in the object store, and recorded in a DVC data registry.

See :mod:`bitextflow.release.formats` for the file formats, :mod:`bitextflow.release.publish` for the
layout and the guarantees (manifest written last, one version per run), :mod:`bitextflow.release.registry`
for the DVC registry and :mod:`bitextflow.release.status` for the state of every pair.
"""

from bitextflow.release.formats import corpus_stats, validate_tmx, write_jsonl, write_tmx, write_tsv, xml_safe
from bitextflow.release.publish import (
    MANIFEST_NAME,
    RELEASES_PREFIX,
    ReleaseExtras,
    ReleaseInfo,
    build_release,
    list_releases,
    monolingual_corpus,
    next_version,
    publish_release,
    release_prefix,
)

__all__ = [
    "MANIFEST_NAME",
    "RELEASES_PREFIX",
    "ReleaseExtras",
    "ReleaseInfo",
    "build_release",
    "corpus_stats",
    "list_releases",
    "monolingual_corpus",
    "next_version",
    "publish_release",
    "release_prefix",
    "validate_tmx",
    "write_jsonl",
    "write_tmx",
    "write_tsv",
    "xml_safe",
]
