"""Content digests of files: release manifests, model stamps and dictionary manifests share one reader."""

import hashlib
from pathlib import Path


def tree_sha256(folder: Path, exclude: frozenset[str] = frozenset()) -> str:
    """One digest over every file's relative path and bytes, in path order (files named in ``exclude`` left out)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in exclude):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(bytes.fromhex(file_sha256(path)))
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks so large corpora and models need no memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
