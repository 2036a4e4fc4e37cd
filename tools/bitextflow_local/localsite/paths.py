"""Where the local site lives in the cache; shared by the builder and by `Truth.load`, which must agree."""

from __future__ import annotations

from pathlib import Path

from bitextflow.settings import cache_dir

DOCROOT_DIRNAME = "site"
TRUTH_FILENAME = "truth.json"
SITE_DIRNAME = "localsite"
FULL_SITE_DIRNAME = "localsite-full"  # beside the default site's cache folder


def default_cache_dir() -> Path:
    """The cache folder `localsite` (:func:`bitextflow.settings.cache_dir`: `~/.cache/bitextflow/localsite` by default).

    The downloaded packages are kept there across runs, so tests, demo and benchmarks share one copy.
    """
    return cache_dir(SITE_DIRNAME)
