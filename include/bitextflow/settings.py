"""Where bitextflow keeps things on this machine: the project home and the cache, in one place.

- **Project home**: the folder with ``include/pairs`` and the local state ``.local/`` (generated service
  settings, the local DVC registry). ``$BITEXTFLOW_HOME``, else the nearest folder at or above the
  current directory that has ``include/pairs``, else the checkout this package was installed from
  (an editable install), else the current directory.
- **Cache**: data and models built once, offline (dictionaries, converted encoders, trained models,
  downloaded Debian packages). ``$BITEXTFLOW_CACHE``, else ``$XDG_CACHE_HOME/bitextflow``, else
  ``~/.cache/bitextflow``.
- **Embedding cache**: the vectors the ``embed`` stage made on this machine (:mod:`bitextflow.models.embedding_cache`).
  ``$BITEXTFLOW_EMBEDDING_CACHE``, else ``<cache>/embeddings``; it must be on a local disk.

Storage settings (S3 endpoint and credentials) are not here: see :class:`bitextflow.storage.StorageSettings`.
"""

from __future__ import annotations

import os
from pathlib import Path

PAIRS_SUBDIR = Path("include") / "pairs"


def _has_pairs(folder: Path) -> bool:
    return (folder / PAIRS_SUBDIR).is_dir()


def project_home() -> Path:
    """The folder with ``include/pairs`` and ``.local`` (see the module docstring for the order)."""
    if os.environ.get("BITEXTFLOW_HOME"):
        return Path(os.environ["BITEXTFLOW_HOME"])
    cwd = Path.cwd()
    for folder in (cwd, *cwd.parents, *Path(__file__).resolve().parents):
        if _has_pairs(folder):
            return folder
    return cwd


def pairs_dir(explicit: str | Path | None = None) -> Path:
    """The folder of pair configs: ``explicit``, else ``$BITEXTFLOW_PAIRS_DIR``, else ``<home>/include/pairs``."""
    chosen = explicit or os.environ.get("BITEXTFLOW_PAIRS_DIR")
    return Path(chosen) if chosen else project_home() / PAIRS_SUBDIR


def local_state_dir() -> Path:
    """``<home>/.local``: what the local services generate (settings, passwords, the local DVC registry)."""
    return project_home() / ".local"


def cache_dir(*parts: str) -> Path:
    """A folder under the cache root (not created): ``cache_dir("models", "domain")``."""
    root = os.environ.get("BITEXTFLOW_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = str(Path(xdg) / "bitextflow") if xdg else str(Path.home() / ".cache" / "bitextflow")
    return Path(root).joinpath(*parts)


def embedding_cache_dir() -> Path:
    """The folder of this machine's embedding cache (see the module docstring)."""
    configured = os.environ.get("BITEXTFLOW_EMBEDDING_CACHE")
    return Path(configured) if configured else cache_dir("embeddings")


def bicleaner_python() -> Path:
    """The bicleaner environment's interpreter: ``$BITEXTFLOW_BICLEANER_PYTHON``, else ``<home>/.venv-bicleaner``."""
    configured = os.environ.get("BITEXTFLOW_BICLEANER_PYTHON")
    return Path(configured) if configured else project_home() / ".venv-bicleaner" / "bin" / "python"


def heliport_executable() -> Path:
    """heliport's command line (GPLv3, so in an environment of its own): ``$BITEXTFLOW_HELIPORT``, else
    ``<home>/.venv-heliport/bin/heliport``."""
    configured = os.environ.get("BITEXTFLOW_HELIPORT")
    return Path(configured) if configured else project_home() / ".venv-heliport" / "bin" / "heliport"


def load_services_env() -> None:
    """Adopt the local services' settings unless the environment already names an endpoint.

    The local stack writes them to ``<home>/.local/services.env``; ``BITEXTFLOW_SERVICES_ENV`` names
    another file, and set empty never reads one (tests and pods do).
    """
    configured = os.environ.get("BITEXTFLOW_SERVICES_ENV")
    if configured == "" or os.environ.get("BITEXTFLOW_S3_ENDPOINT_URL"):
        return
    env_file = Path(configured) if configured else local_state_dir() / "services.env"
    if not env_file.is_file():
        return
    for line in env_file.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not name.startswith("#"):
            os.environ.setdefault(name.strip(), value.strip())
