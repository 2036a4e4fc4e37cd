"""The DVC data registry: a git repository recording every release, its data on an S3 DVC remote.

Each release ``releases/<pair>/v<N>/`` is downloaded from the object store into the registry's
working tree under the deployment's namespace (``release.namespace``, by default the storage bucket),
checked against its manifest, ``dvc add``-ed, ``dvc push``-ed to the remote (``s3://<bucket>/dvc`` on the
same endpoint by default), committed and tagged ``<namespace>/<pair>-v<N>``, so that anyone with the
registry and S3 credentials gets exactly that release with::

    dvc get <registry> bitextflow/releases/en-es/v3 --rev bitextflow/en-es-v3

Models are recorded the same way from a local folder (:meth:`DataRegistry.record_model`):
``<namespace>/models/<name>/v<N>`` tagged ``<namespace>/model-<name>-v<N>``. Two buckets or deployments that
share a registry therefore never take each other's tags.

The registry is a local path by default (created on first use) or a git URL, which is cloned,
updated and pushed back with its tags. Recording is idempotent on content: each tag is annotated with
the digest of what it records (the release's manifest, the model folder's files), so recording the
same release again changes nothing, and a tag that exists with other content is an error naming both
digests. A recording interrupted before its commit is redone from the start. A file lock serialises
recordings that share a local registry (two pair DAGs publishing at once).

DVC and git run as subprocesses, the way a user runs them; S3 credentials reach DVC through the
standard ``AWS_*`` variables of the child process only: they are never written to the registry
(its committed DVC config holds the remote URL and endpoint, nothing secret).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from bitextflow.catalog.releases import MANIFEST_NAME, ReleaseInfo, release_prefix
from bitextflow.config import PairConfig
from bitextflow.errors import StageError
from bitextflow.hashing import file_sha256, tree_sha256
from bitextflow.settings import local_state_dir
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.layout import local_path
from bitextflow.text.urls import without_credentials

REGISTRY_ENV = "BITEXTFLOW_REGISTRY"
REMOTE_NAME = "storage"
#: Longest a git or DVC command may take: a push of a large release over a slow link, not a hung server.
TIMEOUT_S = 3600
_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bitextflow",
    "GIT_AUTHOR_EMAIL": "bitextflow@localhost",
    "GIT_COMMITTER_NAME": "bitextflow",
    "GIT_COMMITTER_EMAIL": "bitextflow@localhost",
}


#: The line of an annotated tag that names the digest of what it records.
DIGEST_TRAILER = "bitextflow-digest"


def release_tag(namespace: str, pair: str, version: int) -> str:
    return f"{namespace}/{pair}-v{version}"


def model_tag(namespace: str, name: str, version: int) -> str:
    """Tag of a model version, e.g. ``bitextflow/model-bicleaner-en-es-v2``; ``model-`` keeps it apart from releases."""
    return f"{namespace}/model-{name}-v{version}"


def model_path(namespace: str, name: str, version: int) -> str:
    return f"{namespace}/models/{name}/v{version}"


def release_path(namespace: str, pair: str, version: int) -> str:
    """Path of a release inside the registry: its S3 prefix, without the trailing slash, under the namespace."""
    return f"{namespace}/{release_prefix(pair, version).rstrip('/')}"


def registry_namespace(config: PairConfig) -> str:
    """``release.namespace``, else the storage bucket: what keeps deployments apart in a shared registry."""
    return config.release.namespace or config.storage.bucket


def default_registry() -> str:
    """``$BITEXTFLOW_REGISTRY``, else ``.local/registry`` in the project home."""
    if os.environ.get(REGISTRY_ENV):
        return os.environ[REGISTRY_ENV]
    return str(local_state_dir() / "registry")


def registry_for(config: PairConfig, settings: StorageSettings) -> DataRegistry:
    """The registry a pair records its releases in, per its ``release`` config section."""
    remote = config.release.dvc_remote or f"s3://{config.storage.bucket}/dvc"
    return DataRegistry(config.release.registry or default_registry(), settings, remote, registry_namespace(config))


def error_line(output: str) -> str:
    """What a failed git or DVC command says went wrong, on one line: its first ``ERROR:`` (DVC, which ends with a
    support footer), ``fatal:`` or ``error:`` (git) line, else its last line."""
    lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("ERROR:", "fatal:", "error:"))]
    return (errors or lines or ["no output"])[0 if errors else -1]


def is_git_url(location: str) -> bool:
    return "://" in location or (location.startswith("git@") and ":" in location)


@dataclass(frozen=True)
class RegistryEntry:
    """A release as recorded: how to ask DVC for it."""

    registry: str
    path: str
    tag: str
    commit: str
    recorded: bool  # False when the tag already existed (a retried task)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def get_command(self) -> str:
        return f"dvc get {self.registry} {self.path} --rev {self.tag}"


class DataRegistry:
    """One registry, with the S3 settings its DVC remote is reached with."""

    def __init__(self, location: str, settings: StorageSettings, remote_url: str, namespace: str):
        if not remote_url.startswith("s3://"):
            raise StageError(f"DVC remote {remote_url!r} is not an s3:// URL; set release.dvc_remote to s3://<bucket>/<prefix>")
        self.location = location if is_git_url(location) else str(Path(location).expanduser().resolve())
        #: The location as logged, returned (XCom) and put in error messages: a token in a git URL stays out of them.
        self.shown_location = without_credentials(self.location)
        self.settings = settings
        self.remote_url = remote_url
        self.namespace = namespace

    # -- processes ------------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GIT_DIR", "GIT_WORK_TREE"))}
        env.update(_GIT_IDENTITY, DVC_NO_ANALYTICS="1")
        if self.settings.access_key_id:
            env["AWS_ACCESS_KEY_ID"] = self.settings.access_key_id
        if self.settings.secret_access_key:
            env["AWS_SECRET_ACCESS_KEY"] = self.settings.secret_access_key
        env["AWS_DEFAULT_REGION"] = self.settings.region
        return env

    def _run(self, argv: Sequence[str], cwd: Path | None, what: str) -> str:
        try:
            result = subprocess.run(list(argv), cwd=cwd, env=self._env(), capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise StageError(
                f"DVC registry {self.shown_location}: {what} did not finish in {TIMEOUT_S} s; check the registry's host"
            ) from None
        if result.returncode != 0:
            detail = error_line(result.stderr or result.stdout).replace(self.location, self.shown_location)[:400]
            raise StageError(
                f"DVC registry {self.shown_location}: {what} failed ({detail}); check the registry and the S3 settings"
            )
        return result.stdout

    def _git(self, repo: Path, *args: str) -> str:
        return self._run(["git", "-C", str(repo), *args], None, f"git {args[0]}")

    def _dvc(self, repo: Path, *args: str) -> str:
        return self._run([sys.executable, "-m", "dvc", *args], repo, f"dvc {args[0]}")

    # -- checkout -------------------------------------------------------------------------------
    @contextmanager
    def _checkout(self) -> Iterator[Path]:
        """A working tree of the registry: the local registry itself (locked), or a clone of the URL."""
        if is_git_url(self.location):
            with tempfile.TemporaryDirectory(prefix="bitextflow-registry-") as tmp:
                work = Path(tmp) / "registry"
                self._run(["git", "clone", "--quiet", "--", self.location, str(work)], None, "git clone")
                self._prepare(work)
                yield work
            return
        work = Path(self.location)
        work.mkdir(parents=True, exist_ok=True)
        with FileLock(str(work.parent / f".{work.name}.lock")):
            self._prepare(work)
            yield work

    def _prepare(self, work: Path) -> None:
        """Make ``work`` a git + DVC repository whose default remote is ours (committed when it changes)."""
        if not (work / ".git").exists():
            self._git(work, "init", "--quiet", "--initial-branch=main")
        if not (work / ".dvc").is_dir():
            self._dvc(work, "init", "--quiet")
        config = work / ".dvc" / "config"
        if f"url = {self.remote_url}\n" not in config.read_text():  # each dvc call costs a second: skip what is set
            self._dvc(work, "remote", "add", "--default", "--force", REMOTE_NAME, self.remote_url)
        # read again: `remote add --force` rewrote the section without its endpoint (another bucket's remote was set)
        if self.settings.endpoint_url and f"endpointurl = {self.settings.endpoint_url}\n" not in config.read_text():
            self._dvc(work, "remote", "modify", REMOTE_NAME, "endpointurl", self.settings.endpoint_url)
        self._git(work, "add", ".dvc/config", ".dvc/.gitignore", ".dvcignore")
        self._commit(work, "Configure the DVC remote")

    def _commit(self, work: Path, message: str) -> None:
        staged = subprocess.run(["git", "-C", str(work), "diff", "--cached", "--quiet"], env=self._env(), timeout=TIMEOUT_S)
        if staged.returncode != 0:
            self._git(work, "commit", "--quiet", "-m", message)

    # -- operations -----------------------------------------------------------------------------
    def tags(self) -> list[str]:
        """Every release tag in the registry (none when it does not exist yet)."""
        if is_git_url(self.location):
            out = self._run(["git", "ls-remote", "--tags", "--", self.location], None, "git ls-remote")
            return sorted(line.split("refs/tags/")[-1] for line in out.splitlines() if "^{}" not in line)
        if not (Path(self.location) / ".git").exists():
            return []
        return self._git(Path(self.location), "tag", "--list").split()

    def record(self, store: ObjectStore, release: ReleaseInfo) -> RegistryEntry:
        """Record ``release`` (published in ``store``) and tag it; see the module docstring."""
        manifest = store.get_bytes(release_prefix(release.pair, release.version) + MANIFEST_NAME)
        return self._record(
            release_tag(self.namespace, release.pair, release.version),
            release_path(self.namespace, release.pair, release.version),
            lambda target: _download_release(store, release, target),
            f"Release {release.pair} v{release.version} (run {release.run_id})",
            hashlib.sha256(manifest).hexdigest(),
        )

    def record_model(self, name: str, version: int, folder: Path) -> RegistryEntry:
        """Record the model ``folder`` as ``models/<name>/v<N>``, tagged ``model-<name>-v<N>``; idempotent as releases."""
        if not folder.is_dir():
            raise StageError(f"model folder {folder} does not exist; build or train the model before recording it")
        return self._record(
            model_tag(self.namespace, name, version),
            model_path(self.namespace, name, version),
            lambda target: shutil.copytree(folder, target),
            f"Model {name} v{version}",
            tree_sha256(folder),
        )

    def _record(self, tag: str, path: str, fill: Callable[[Path], None], message: str, digest: str) -> RegistryEntry:
        """``fill`` the folder ``path`` of the working tree, then ``dvc add``, ``dvc push``, commit and tag it with
        ``digest``; a no-op when ``tag`` records that digest already, an error when it records another."""
        with self._checkout() as work:
            if tag in self._git(work, "tag", "--list", tag).split():
                recorded = self._recorded_digest(work, tag)
                if recorded != digest:
                    raise StageError(
                        f"DVC registry {self.shown_location}: tag {tag} already records other content (digest "
                        f"{recorded or 'none'}), not this one ({digest}); two deployments share the namespace "
                        f"{self.namespace!r}: give one of them its own release.namespace"
                    )
                commit = self._git(work, "rev-list", "-n", "1", tag).strip()
                return RegistryEntry(self.shown_location, path, tag, commit, recorded=False)
            target = work / path
            if target.exists():
                shutil.rmtree(target)  # left by an attempt that stopped before its commit
            fill(target)
            # not --quiet: it silences DVC's own error line too, leaving only its support footer
            self._dvc(work, "add", path)
            self._dvc(work, "push", f"{path}.dvc")
            self._git(work, "add", f"{path}.dvc", str(Path(path).parent / ".gitignore"))
            self._commit(work, message)
            self._git(work, "tag", "--annotate", tag, "--message", f"{message}\n\n{DIGEST_TRAILER}: {digest}")
            if is_git_url(self.location):
                self._git(work, "push", "--quiet", "origin", "HEAD", f"refs/tags/{tag}")
            commit = self._git(work, "rev-parse", "HEAD").strip()
        return RegistryEntry(self.shown_location, path, tag, commit, recorded=True)

    def _recorded_digest(self, work: Path, tag: str) -> str | None:
        """The digest an annotated tag names, or None (a tag made otherwise)."""
        contents = self._git(work, "tag", "--list", "--format=%(contents)", tag)
        for line in contents.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == DIGEST_TRAILER:
                return value.strip()
        return None

    def get(self, path: str, rev: str, out: Path) -> Path:
        """``dvc get <registry> <path> --rev <rev> -o <out>``: what a user runs to fetch a release."""
        out.parent.mkdir(parents=True, exist_ok=True)
        self._run(
            [sys.executable, "-m", "dvc", "get", "--rev", rev, "-o", str(out), "--force", "--", self.location, path],
            out.parent,
            "dvc get",
        )
        return out


def _download_release(store: ObjectStore, release: ReleaseInfo, target: Path) -> None:
    """The release's files into ``target`` (exactly the manifest's files), each checked against its SHA-256. A name
    that would land outside ``target`` (``..``, an absolute path: the registry's ``.git/hooks``) is refused before
    anything is written."""
    prefix = release_prefix(release.pair, release.version)
    manifest = store.get_json(prefix + MANIFEST_NAME)
    paths = {name: local_path(target, name) for name in manifest["files"]}
    target.mkdir(parents=True)
    for name, entry in manifest["files"].items():
        local = store.download_file(prefix + name, paths[name])
        if file_sha256(local) != entry["sha256"]:
            raise StageError(f"{store.uri(prefix + name)} does not match its manifest's SHA-256; the release is damaged")
    store.download_file(prefix + MANIFEST_NAME, target / MANIFEST_NAME)
