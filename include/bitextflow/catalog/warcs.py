"""Existing WARC files as the extract stage's shards, instead of a crawl (``crawl.warcs``).

A location is a key of the pair's bucket or ``s3://bucket/key`` of another bucket, and names one of: an
exact key (it must exist), a prefix ending in ``/`` (every ``.warc`` and ``.warc.gz`` file under it) or a
glob (``*``, ``?``, ``[...]``, matched with :mod:`fnmatch` against whole keys, so ``*`` crosses ``/``).
Another bucket is on the storage endpoint with the storage credentials, unless ``crawl.warc_buckets``
places it on its own endpoint (Common Crawl's public bucket, read with unsigned requests). Shards are
referred to by key in the pair's bucket and by ``s3://bucket/key`` elsewhere; :func:`warc_object` turns a
reference back into a store and a key. Any WARC works: FastWARC reads gzip-per-record or plain files,
with or without request records.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from bitextflow.config import WarcBucket
from bitextflow.errors import StageError
from bitextflow.storage import ObjectStore, StorageSettings

WARC_SUFFIXES = (".warc", ".warc.gz")
_GLOB = re.compile(r"[*?\[]")


def warc_object(store: ObjectStore, reference: str, buckets: Mapping[str, WarcBucket] | None = None) -> tuple[ObjectStore, str]:
    """The store and key of a shard reference (or a location of ``crawl.warcs``); ``buckets``: ``crawl.warc_buckets``."""
    if not reference.startswith("s3://"):
        return store, reference
    bucket, _, key = reference.removeprefix("s3://").partition("/")
    if bucket in (buckets or {}):
        source = buckets[bucket]  # type: ignore[index]
        # never the storage credentials: they are not meant for another endpoint (None: boto3's own chain)
        settings = StorageSettings(
            endpoint_url=source.endpoint_url,
            access_key_id=None,
            secret_access_key=None,
            region=source.region,
            anonymous=source.anonymous,
        )
        return ObjectStore(settings, bucket), key
    return (store if bucket == store.bucket else ObjectStore(store.settings, bucket)), key


def _matching(source: ObjectStore, pattern: str, option: str) -> list[str]:
    glob = _GLOB.search(pattern)
    if glob is None and not pattern.endswith("/"):
        if not source.exists(pattern):
            raise StageError(f"{option}: {source.uri(pattern)} does not exist; fix the key or upload the WARC file there")
        return [pattern]
    prefix = pattern[: glob.start()] if glob else pattern
    keys = [key for key in source.iter_keys(prefix) if key.endswith(WARC_SUFFIXES)]
    if glob:
        keys = [key for key in keys if fnmatch.fnmatchcase(key, pattern)]
    if not keys:
        raise StageError(
            f"{option}: no .warc or .warc.gz file matches {source.uri(pattern)}; fix the prefix or pattern "
            "(a prefix ends in /, a glob uses * ? [...])"
        )
    return sorted(keys)


def resolve_warcs(
    store: ObjectStore, locations: list[str], buckets: Mapping[str, WarcBucket] | None = None, option: str = "crawl.warcs"
) -> list[str]:
    """The shard references of ``locations`` in order, each once; a location that names nothing is an error naming
    ``option``, the setting that lists them."""
    references: dict[str, None] = {}
    for location in locations:
        source, pattern = warc_object(store, location, buckets)
        for key in _matching(source, pattern, option):
            references[key if source is store else source.uri(key)] = None
    return list(references)
