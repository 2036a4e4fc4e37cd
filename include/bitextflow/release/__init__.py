"""Releases: corpus files (TSV, TMX, statistics) published as numbered versions in the object store.

See :mod:`bitextflow.release.formats` for the file formats and :mod:`bitextflow.release.publish` for
the layout and the guarantees (manifest written last, one version per run).
"""

from bitextflow.release.formats import corpus_stats, write_tmx, write_tsv, xml_safe
from bitextflow.release.publish import (
    MANIFEST_NAME,
    RELEASES_PREFIX,
    ReleaseInfo,
    list_releases,
    publish_release,
    release_prefix,
)

__all__ = [
    "MANIFEST_NAME",
    "RELEASES_PREFIX",
    "ReleaseInfo",
    "corpus_stats",
    "list_releases",
    "publish_release",
    "release_prefix",
    "write_tmx",
    "write_tsv",
    "xml_safe",
]
