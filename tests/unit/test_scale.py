"""Runs over many shards stay within Airflow's limits: the extract stage maps over batches of WARC files.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_scale.py's.
"""

from __future__ import annotations

from bitextflow.stages.registry import as_inputs, batches


def test_batches_are_contiguous_balanced_and_bounded() -> None:
    keys = [f"k{i}" for i in range(10)]
    assert batches(keys, 4) == [["k0", "k1", "k2"], ["k3", "k4", "k5"], ["k6", "k7"], ["k8", "k9"]]
    assert batches(keys[:2], 5) == [["k0"], ["k1"]]
    assert batches([], 3) == []
    assert as_inputs(batches(keys, 3)) == keys, "a batched stage's outputs flatten back into order"
