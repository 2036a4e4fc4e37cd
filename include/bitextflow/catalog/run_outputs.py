"""What the latest attempt of a run produced, read from the manifests its stages write rather than from listings.

A run id is reused when an operator clears a failed run; if the pair's YAML changed meanwhile (other site
partitions, other document pairs per shard), the earlier attempt's files that the new one does not write again stay
in the store under the same prefix. A reader that lists a stage's folder would take them into the release (document
pairs, the monolingual corpus), the gate's figures, the stats and status, the GPU step's inputs. So the stages that
fix a run's layout write manifests, each rewritten by every attempt, and readers start from them:

- ``partitions/plan.json`` (the ``partition`` stage's plan): the site partitions that hold documents;
- ``align_documents/part-NNNNN.outputs.json`` (each ``align_documents`` task, last): the partition's document-pair
  shards for sentence alignment and, in an incremental run, what it carried over (:class:`PartitionOutputs`);
- ``gate/sentence_pairs.outputs.json`` (the ``gate`` stage): the gated pairs, one file per partition.

Outputs named after a partition (``part-NNNNN``) or a document-pair shard (``part-NNNNN-SSSSS``: sentence pairs,
scores, counts, gate reports) belong to the latest attempt when their partition and shard are in these manifests
(:meth:`RunOutputs.holds`). A run written before the manifests existed has none of them: its files are read as
listed, as they always were.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import GATED_OUTPUTS, GATED_PAIRS, PARTITION_PLAN, partition_outputs_name, stage_key

_PARTITION = re.compile(r"part-(\d{5})(?:-(\d{5}))?")
#: Stages before the exchange by site partition: their names are WARC files', whatever they say.
_BEFORE_PARTITIONS = frozenset({"crawl", "extract"})


@dataclass(frozen=True)
class PartitionOutputs:
    """What one ``align_documents`` task wrote for its partition (keys)."""

    partition: int
    #: The partition's document-pair shards, the inputs of sentence alignment.
    document_pair_shards: list[str] = field(default_factory=list)
    #: An incremental run's document pairs and sentence pairs carried over from the last release, if any.
    carried_document_pairs: str | None = None
    carried_sentence_pairs: str | None = None

    @property
    def document_pairs(self) -> list[str]:
        """The partition's document pairs as released: the shards and those carried over."""
        return [*self.document_pair_shards, *([self.carried_document_pairs] if self.carried_document_pairs else [])]


def write_partition_outputs(store: ObjectStore, pair: str, run_id: str, outputs: PartitionOutputs) -> str:
    return store.put_json(stage_key(pair, run_id, "align_documents", partition_outputs_name(outputs.partition)), asdict(outputs))


def write_gated_outputs(store: ObjectStore, pair: str, run_id: str, gated: list[str]) -> str:
    return store.put_json(stage_key(pair, run_id, "gate", GATED_OUTPUTS), {"gated": gated})


def _numbers(key: str) -> tuple[int | None, int | None]:
    """(partition, document-pair shard) a key's name is about, from ``part-NNNNN[-SSSSS]`` (None where it says none)."""
    match = _PARTITION.search(Path(key).name)
    if match is None:
        return None, None
    return int(match.group(1)), int(match.group(2)) if match.group(2) else None


class RunOutputs:
    """The manifests of one run, each read once when first needed."""

    def __init__(self, store: ObjectStore, pair: str, run_id: str):
        self.store, self.pair, self.run_id = store, pair, run_id
        plan_key = stage_key(pair, run_id, "partitions", PARTITION_PLAN)
        #: The partitions of the latest plan; None for a run without one (no partition stage yet, or older code).
        self.partitions: frozenset[int] | None = (
            frozenset(store.get_json(plan_key)["holding"]) if store.exists(plan_key) else None
        )
        self._manifests: dict[int, PartitionOutputs | None] = {}
        self._gated: list[str] | None = None
        self._shards: dict[int, frozenset[int | None]] = {}  # the shard numbers of each manifest

    def partition(self, partition: int) -> PartitionOutputs | None:
        """The partition's ``align_documents`` manifest (None: no task of the latest attempt wrote one)."""
        if partition not in self._manifests:
            key = stage_key(self.pair, self.run_id, "align_documents", partition_outputs_name(partition))
            self._manifests[partition] = PartitionOutputs(**self.store.get_json(key)) if self.store.exists(key) else None
        return self._manifests[partition]

    def holds(self, key: str) -> bool:
        """Whether ``key`` belongs to the latest attempt: a partition's output needs its partition in the plan, a
        document-pair shard's output its shard in the partition's manifest, gated pairs the gate's manifest (once
        the gate has written one). Keys about neither always do."""
        partition, shard = _numbers(key)
        if partition is None or self.partitions is None or key.split("/")[2] in _BEFORE_PARTITIONS:
            return True
        if partition not in self.partitions:
            return False
        if key.split("/")[2] == "gate" and GATED_PAIRS.search(Path(key).name):
            gated = self.gated()
            return gated is None or key in gated
        manifest = self.partition(partition) if shard is not None else None
        if manifest is None:
            return True
        if partition not in self._shards:
            self._shards[partition] = frozenset(_numbers(key)[1] for key in manifest.document_pair_shards)
        return shard in self._shards[partition]

    def current(self, keys: list[str]) -> list[str]:
        """``keys`` (a listing) less those of earlier attempts."""
        return [key for key in keys if self.holds(key)]

    def document_pairs(self, listed: list[str]) -> list[str]:
        """The run's document pairs as released, partition by partition: from each partition's manifest, or, for a
        partition without one (a run of older code), its keys in ``listed``."""
        by_partition: dict[int, list[str]] = {}
        for key in self.current(listed):
            partition, _shard = _numbers(key)
            by_partition.setdefault(partition if partition is not None else -1, []).append(key)
        for partition in self.partitions or ():
            manifest = self.partition(partition)
            if manifest is not None:
                by_partition[partition] = manifest.document_pairs
        return [key for partition in sorted(by_partition) for key in sorted(by_partition[partition])]

    def gated(self) -> list[str] | None:
        """The gated pairs the gate of the latest attempt wrote (None: it has not got so far, or the run predates it)."""
        if self._gated is None:
            key = stage_key(self.pair, self.run_id, "gate", GATED_OUTPUTS)
            self._gated = list(self.store.get_json(key)["gated"]) if self.store.exists(key) else None
        return self._gated
