"""Content digests of files: release manifests, model stamps and dictionary manifests share one reader."""

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks so large corpora and models need no memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
