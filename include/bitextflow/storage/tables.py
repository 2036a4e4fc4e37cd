"""Parquet tables in the object store: how stage records travel between tasks."""

from __future__ import annotations

import io
import re

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bitextflow.records import OPTIONAL
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import stage_key

_ROWS_PER_READ = 8192


def write_table(store: ObjectStore, key: str, frame: pd.DataFrame, schema: pa.Schema) -> str:
    """Write ``frame`` with an explicit schema, so that an empty shard still has typed columns.

    Columns the schema marks optional (field metadata ``optional``) that ``frame`` lacks are written as nulls.
    """
    absent = [f.name for f in schema if f.name not in frame.columns and (f.metadata or {}).get(OPTIONAL)]
    if absent:
        frame = frame.assign(**dict.fromkeys(absent))
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    buffer = io.BytesIO()
    # Deterministic bytes for identical input: no timestamps or writer-specific metadata vary.
    pq.write_table(table, buffer, compression="zstd")
    return store.put_bytes(key, buffer.getvalue(), "application/vnd.apache.parquet")


def read_table(store: ObjectStore, key: str) -> pd.DataFrame:
    return pq.read_table(io.BytesIO(store.get_bytes(key))).to_pandas()


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
