"""Where the local site lives in the cache; shared by the builder and by `Truth.load`, which must agree."""

from __future__ import annotations

import os
from pathlib import Path

DOCROOT_DIRNAME = "site"
TRUTH_FILENAME = "truth.json"
FULL_SITE_DIRNAME = "localsite-full"  # beside the default site's cache folder


def default_cache_dir() -> Path:
    """`$BITEXTFLOW_CACHE/localsite`, else `~/.cache/bitextflow/localsite`.

    The downloaded packages are kept there across runs, so tests, demo and benchmarks share one copy.
    """
    root = os.environ.get("BITEXTFLOW_CACHE") or Path.home() / ".cache" / "bitextflow"
    return Path(root) / "localsite"
