"""What the tests of every tier share besides fixtures: the project's paths, the gold data, small helpers.

Fixtures live in the conftest files (``tests/conftest.py`` for the services every tier may name, each tier's own
for the rest); this module holds the plain functions, importable as ``from tests.support import ...``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVAL_DIR = ROOT.parent / "shared" / "eval"
BUCKET = "bitextflow"


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1 (for a service a test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` answering on a free port of 127.0.0.1, in a thread, for the block; yields ``127.0.0.1:<port>``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True  # a request still open (a slow or hostile handler) does not hold up the shutdown
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """A test site's request handler: it logs nothing and answers whole responses with :meth:`answer`."""

    def log_message(self, *args: object) -> None:
        pass

    def answer(
        self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", headers: Mapping[str, str] | None = None
    ) -> None:
        """One response: ``status``, ``content_type``, ``headers`` and ``body`` with its length."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


#: How long a wait for an event may last before the test calls it a hang. No run of the suite comes near it, on a loaded
#: 2-core machine either (docs/testing.md): reaching it means what was awaited never happened, not that it was slow.
HANG_S = 20 * 60


def wait_for(
    event: Callable[[], object], awaited: str, seen: Callable[[], object] | None = None, ceiling_s: float = HANG_S,
    poll_s: float = 0.2,
) -> object:  # fmt: skip
    """``event()``'s first truthy result, polled every ``poll_s`` seconds: a test waits for what it needs to happen (a
    task state, a file, a log line), never for a fixed time. Past ``ceiling_s`` (a hang, not a slow machine) it fails
    naming what it ``awaited`` and what it saw instead (``seen()``, else the last answer of ``event``)."""
    started = time.monotonic()
    while not (answer := event()):
        if time.monotonic() - started > ceiling_s:
            pytest.fail(f"awaited {awaited} for {ceiling_s:.0f} s; seen instead: {seen() if seen else answer!r}")
        time.sleep(poll_s)
    return answer


@contextmanager
def cpu_clock() -> Iterator[Callable[[], float]]:
    """The CPU seconds this process spends in the block, all its threads together: what a speed test bounds, since wall
    time also counts the seconds the process waited for a core another process held (a loaded machine). Yields a
    function that reads the seconds so far."""
    started = time.process_time()
    yield lambda: time.process_time() - started


def env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a generated settings file (the local stack's ``.env`` files)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def eval_dir(name: str) -> Path:
    """A gold data folder under ../shared/eval, or a skip saying why it is absent."""
    path = EVAL_DIR / name
    if not path.is_dir():
        pytest.skip(f"gold data {path} is absent (it ships beside the repository in CI, not in a user's clone)")
    return path


def cross_shard_duplicates(ctx):
    """The documents a run's deduplicate stage set aside, every partition's (align_documents writes them)."""
    import pandas as pd

    from bitextflow.storage.tables import read_table

    keys = [key for key in ctx.store.list_keys(ctx.key("align_documents", "")) if key.endswith(".cross-shard-duplicates.parquet")]
    return pd.concat([read_table(ctx.store, key) for key in sorted(keys)], ignore_index=True)


def write_partition_documents(store, key: str, sentences) -> str:
    """At ``key`` (a partition's ``documents.parquet``), the documents of a partition whose ``sentences`` (a frame of
    ``records.SENTENCES`` rows) a test wrote by hand: one document per ``doc_id``, a paragraph per ``paragraph_index``,
    as extraction leaves them beside their sentences (sentence alignment reads the pages' paragraphs too)."""
    from bitextflow import records
    from bitextflow.storage.tables import write_table

    documents = []
    for doc_id, rows in sentences.groupby("doc_id", sort=False):
        language, url = rows["language"].iloc[0], rows["url"].iloc[0]
        paragraphs = [
            {"type": "text", "text": " ".join(group["text"]), "language": language, "boilerplate": False,
             "out_of_language": False, "terms": []}
            for _index, group in rows.groupby("paragraph_index", sort=True)
        ]  # fmt: skip
        documents.append({"doc_id": doc_id, "url": url, "language": language, "paragraphs": paragraphs, "images": [],
                          "repairs": [], "language_set": [{"language": language, "share": 1.0}],
                          "partition": int(rows["partition"].iloc[0])})  # fmt: skip
    import pandas as pd

    frame = pd.DataFrame([{field.name: row.get(field.name) for field in records.DOCUMENTS} for row in documents])
    return write_table(store, key, frame, records.DOCUMENTS)


def through_partitions(ctx, documents, sentences=None) -> list[str]:
    """``documents`` (and ``sentences``) written as one extract shard, gathered by the partition stage and de-duplicated
    across the run, as document alignment finds them; returns the partitions' documents keys."""
    from bitextflow import records
    from bitextflow.stages.registry import REGISTRY
    from bitextflow.storage.tables import write_table

    sentences = records.SENTENCES.empty_table().to_pandas() if sentences is None else sentences
    write_table(ctx.store, ctx.key("extract", "s.sentences.parquet"), sentences, records.SENTENCES)
    documents_key = write_table(ctx.store, ctx.key("extract", "s.documents.parquet"), documents, records.DOCUMENTS)
    partitions = REGISTRY.run(ctx, "partition", [documents_key])
    REGISTRY.run(ctx, "deduplicate", partitions)
    return partitions
