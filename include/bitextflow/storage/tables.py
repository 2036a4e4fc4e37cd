"""Parquet tables in the object store: how stage records travel between tasks.

Whole tables for small outputs (:func:`write_table`, :func:`read_table`); for a run's bulk, reads that
fetch only what they need (:func:`read_rows`: some rows' columns; :func:`read_partition`: one site
partition's row groups) and a writer that streams row groups into an object (:class:`TableWriter`).
"""

from __future__ import annotations

import io
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bitextflow.errors import StorageError
from bitextflow.records import OPTIONAL
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import stage_key

_ROWS_PER_READ = 8192
# Footers read at once: each is two small ranged GETs, so the wait is the store's latency.
_FOOTER_READERS = 8


def write_table(
    store: ObjectStore, key: str, frame: pd.DataFrame, schema: pa.Schema, metadata: Mapping[str, str] | None = None
) -> str:
    """Write ``frame`` with an explicit schema, so that an empty shard still has typed columns.

    Columns the schema marks optional (field metadata ``optional``) that ``frame`` lacks are written as nulls.
    ``metadata``: key-value pairs kept in the file's footer (:func:`read_table_and_metadata`), e.g. how its vectors were made.
    """
    absent = [f.name for f in schema if f.name not in frame.columns and (f.metadata or {}).get(OPTIONAL)]
    if absent:
        frame = frame.assign(**dict.fromkeys(absent))
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **dict(metadata)})
    buffer = io.BytesIO()
    # Deterministic bytes for identical input: no timestamps or writer-specific metadata vary.
    pq.write_table(table, buffer, compression="zstd")
    return store.put_bytes(key, buffer.getvalue(), "application/vnd.apache.parquet")


def read_table(store: ObjectStore, key: str, columns: list[str] | None = None) -> pd.DataFrame:
    return pq.read_table(io.BytesIO(store.get_bytes(key)), columns=columns).to_pandas()


def read_table_and_metadata(store: ObjectStore, key: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """``key``'s table and the footer metadata :func:`write_table` kept with it (pandas' own entry left out)."""
    table = pq.read_table(io.BytesIO(store.get_bytes(key)))
    metadata = {name.decode(): value.decode() for name, value in (table.schema.metadata or {}).items() if name != b"pandas"}
    return table.to_pandas(), metadata


class StoredTables:
    """The tables of ``keys``, read one at a time in order each time it is iterated (``columns`` only), so that a
    task can pass over a run's outputs twice without holding them."""

    def __init__(self, store: ObjectStore, keys: list[str], columns: list[str] | None = None):
        self.store, self.keys, self.columns = store, keys, columns

    def __iter__(self) -> Iterator[pd.DataFrame]:
        for key in self.keys:
            yield read_table(self.store, key, self.columns)


def row_groups_by_partition(store: ObjectStore, key: str) -> dict[int, list[int]]:
    """Site partition -> the row groups of ``key`` that may hold its rows, from the file's footer alone (the
    ``partition`` column's statistics; a row group whose statistics span several lists under each of them)."""
    with store.open_read(key, 1 << 16) as stream:
        metadata = pq.ParquetFile(stream).metadata
    # the Parquet leaf column (nested columns such as a document's paragraphs come before it as several leaves)
    column = next(j for j in range(metadata.num_columns) if metadata.schema.column(j).path == "partition")
    found: dict[int, list[int]] = {}
    for group in range(metadata.num_row_groups):
        if metadata.row_group(group).num_rows == 0:
            continue
        statistics = metadata.row_group(group).column(column).statistics
        if statistics is None or not statistics.has_min_max:
            raise StorageError(f"{store.uri(key)} has no partition statistics; extract it again with this version")
        for partition in range(statistics.min, statistics.max + 1):
            found.setdefault(partition, []).append(group)
    return found


def partition_holders(store: ObjectStore, keys: Sequence[str]) -> dict[int, list[tuple[int, str, list[int]]]]:
    """Site partition -> (position in ``keys``, key, row groups) of every file of ``keys`` that holds it, in order, from
    the files' footers (:func:`row_groups_by_partition`), a few read at once."""
    with ThreadPoolExecutor(_FOOTER_READERS) as pool:
        footers = list(pool.map(lambda key: row_groups_by_partition(store, key), keys))
    holders: dict[int, list[tuple[int, str, list[int]]]] = {}
    for position, (key, groups) in enumerate(zip(keys, footers, strict=True)):
        for partition, row_groups in groups.items():
            holders.setdefault(partition, []).append((position, key, row_groups))
    return dict(sorted(holders.items()))


def read_partition(store: ObjectStore, key: str, partition: int, row_groups: list[int]) -> Iterator[tuple[pa.Table, pa.Array]]:
    """The rows of site ``partition`` in ``key``, a row group at a time, fetching only ``row_groups`` (see
    :func:`row_groups_by_partition`) by ranged reads; each with the rows' positions in the file."""
    with store.open_read(key) as stream:
        parquet = pq.ParquetFile(stream)
        starts = [0]
        for group in range(parquet.metadata.num_row_groups):
            starts.append(starts[-1] + parquet.metadata.row_group(group).num_rows)
        for group in row_groups:
            table = parquet.read_row_group(group)
            mine = pc.equal(table["partition"], partition)
            yield table.filter(mine), pc.add(pc.indices_nonzero(mine), starts[group])


class TableWriter:
    """Stream tables of ``schema`` into the object ``key``: row groups go to a local file as they come and the
    file is uploaded (multipart when large) when the block ends without an error, so memory holds one batch.
    Deterministic bytes for the same rows, as :func:`write_table`'s."""

    def __init__(self, store: ObjectStore, key: str, schema: pa.Schema):
        self.store, self.key, self.schema, self.rows = store, key, schema, 0
        self._folder = tempfile.TemporaryDirectory(prefix="bitextflow-table-")
        self._path = Path(self._folder.name) / "table.parquet"
        self._writer = pq.ParquetWriter(self._path, schema, compression="zstd")

    def write(self, table: pa.Table | pd.DataFrame) -> None:
        if isinstance(table, pd.DataFrame):
            table = pa.Table.from_pandas(table, schema=self.schema, preserve_index=False)
        if table.num_rows:
            self._writer.write_table(table.cast(self.schema) if table.schema != self.schema else table)
            self.rows += table.num_rows

    def write_by_partition(self, table: pa.Table) -> None:
        """Write ``table``, sorted by its ``partition`` column, a row group per partition (none holds two), so that a
        reader of one partition fetches its row groups only (:func:`row_groups_by_partition`)."""
        values = table["partition"].to_numpy()
        cuts = [0, *(np.flatnonzero(np.diff(values)) + 1).tolist(), len(values)]
        for start, end in zip(cuts, cuts[1:], strict=False):
            self.write(table.slice(start, end - start))

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        try:
            self._writer.close()
            if kind is None:
                self.store.put_file(self.key, self._path, "application/vnd.apache.parquet")
        finally:
            self._folder.cleanup()


def read_rows(
    store: ObjectStore, keys: list[str], schema: pa.Schema, columns: list[str], column: str, values: set[str]
) -> pd.DataFrame:
    """The rows of ``keys`` whose ``column`` is in ``values``, ``columns`` only. Each file is read by ranged GETs
    (its footer, then the chunks of those columns), a batch of rows at a time, so a task that needs a few
    documents of a large shard neither downloads nor holds the rest: its memory follows what it asked for."""
    selected = pa.array(sorted(values), pa.string())
    parts = []
    for key in keys:
        with store.open_read(key) as stream:
            for batch in pq.ParquetFile(stream).iter_batches(batch_size=_ROWS_PER_READ, columns=columns):
                matching = batch.filter(pc.is_in(batch.column(column), value_set=selected))
                if matching.num_rows:
                    parts.append(matching)
    if not parts:
        return schema.empty_table().select(columns).to_pandas()
    return pa.Table.from_batches(parts).to_pandas()


def read_tables(store: ObjectStore, keys: list[str], schema: pa.Schema) -> pd.DataFrame:
    """Concatenate shards; an empty list gives an empty frame with the stage's columns."""
    frames = [read_table(store, key) for key in keys]
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return schema.empty_table().to_pandas()
    return pd.concat(frames, ignore_index=True)


def stage_outputs(store: ObjectStore, pair: str, run_id: str, folder: str, pattern: re.Pattern[str]) -> list[str]:
    """Keys directly in a run's stage ``folder`` whose names match ``pattern`` (:mod:`bitextflow.storage.layout`), sorted."""
    prefix = stage_key(pair, run_id, folder, "")
    return sorted(key for key in store.list_keys(prefix) if "/" not in key[len(prefix) :] and pattern.search(key[len(prefix) :]))
