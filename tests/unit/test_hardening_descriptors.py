"""Extraction keeps a bounded number of files open whatever the number of site partitions and sites: a WARC of many
sites, cut into P = 1,024 partitions, extracts in a process allowed 64 open files (it needed two per partition).
The WARC is made here with warcio; the extraction runs in a child process whose limit is lowered with setrlimit."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

SITES = 300
OPEN_FILES = 64

CHILD = """
import json, resource, sys
from pathlib import Path
from bitextflow.config import ExtractConfig
from bitextflow.extract import extract_shard

resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
result = extract_shard(
    Path(sys.argv[1]), Path(sys.argv[2]), warc_key="k/many-sites.warc.gz", languages={{"en", "es"}},
    config=ExtractConfig(site_partitions=1024, min_sentence_tokens=3),
)
print(json.dumps({{"documents": str(result.documents), "sentences": str(result.sentences),
                  "kept": result.document_counts.kept, "dropped": result.document_counts.to_dict()["dropped"]}}))
"""


def name(site: int) -> str:
    """A name of letters only (duplicates are found on letters, and a site is its registered domain)."""
    return "".join("abcdefghij"[int(digit)] for digit in str(site))


def url(site: int) -> str:
    return f"http://{name(site)}-docs.org/guide.html"


def many_sites_warc(path: Path) -> Path:
    """One page on each of ``SITES`` sites (registered domains), each saying something of its own (no duplicates)."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True, warc_version="1.1")
    for site in range(SITES):
        paragraphs = "".join(
            f"<p>The {name(site)} site explains step {'xyzw'[step]} of installing the {name(site)} package on Debian.</p>"
            for step in range(4)
        )
        body = f"<html><head><title>Guide {name(site)}</title></head><body><main>{paragraphs}</main></body></html>"
        record = writer.create_warc_record(
            url(site), "response", payload=io.BytesIO(body.encode()),
            http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"),
        )  # fmt: skip
        writer.write_record(record)
    path.write_bytes(buffer.getvalue())
    return path


def test_a_warc_of_many_sites_extracts_under_a_low_open_files_limit(tmp_path: Path) -> None:
    warc = many_sites_warc(tmp_path / "many-sites.warc.gz")
    child = subprocess.run(
        [sys.executable, "-c", CHILD.format(limit=OPEN_FILES), str(warc), str(tmp_path / "out")],
        capture_output=True, text=True, env={**os.environ}, timeout=300,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-2000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["kept"] == SITES, result["dropped"]
    for name in ("documents", "sentences"):
        parquet = pq.ParquetFile(result[name])
        groups = [parquet.metadata.row_group(i) for i in range(parquet.metadata.num_row_groups)]
        column = next(i for i in range(groups[0].num_columns) if groups[0].column(i).path_in_schema == "partition")
        bounds = [(group.column(column).statistics.min, group.column(column).statistics.max) for group in groups]
        assert all(low == high for low, high in bounds), "a row group holds two site partitions"
        assert [low for low, _high in bounds] == sorted(low for low, _high in bounds), "partitions out of order"
        assert len({low for low, _high in bounds}) > 200, "the sites were cut into many partitions"
    documents = pq.read_table(result["documents"], columns=["url"]).column("url").to_pylist()
    assert sorted(documents) == sorted(url(site) for site in range(SITES))
    assert not list((tmp_path / "out").glob("*.spill-*")), "spills are removed"
