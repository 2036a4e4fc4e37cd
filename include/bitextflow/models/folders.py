"""Model folders built once into the cache: written beside their final place, then renamed into it.

An interrupted build leaves no half-written folder where readers look, and two processes building the
same folder at once both succeed (the second keeps the first's result when it is current).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def built_in_place(out_dir: Path, is_current: Callable[[Path], bool], replace_current: bool = False) -> Iterator[Path]:
    """Yield an empty staging folder; when the block ends without an error, it becomes ``out_dir``.

    ``is_current(folder)`` says whether a folder already holds what this build makes: a current
    ``out_dir`` that another process wrote meanwhile is kept (unless ``replace_current``), since the two
    builds are the same and readers may already have it open; an outdated one is replaced.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # Not tempfile.mkdtemp: its 0700 mode would survive the rename and hide the model from other users.
    staging = out_dir.parent / f".{out_dir.name}.{os.getpid()}.{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        yield staging
        if out_dir.exists():
            if is_current(out_dir) and not replace_current:
                return
            outdated = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old.", dir=out_dir.parent))
            os.replace(out_dir, outdated / out_dir.name)
            shutil.rmtree(outdated, ignore_errors=True)
        try:
            os.rename(staging, out_dir)
        except OSError:
            if not is_current(out_dir):  # not another build that finished first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
