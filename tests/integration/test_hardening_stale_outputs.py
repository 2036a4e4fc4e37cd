"""A run cleared and run again after the pair's YAML changed (other site partitions, other document pairs per shard)
leaves the earlier attempt's files under the same prefix; the readers take what the latest attempt wrote (its
manifests), not what a listing finds (docs/security.md). Real stages (partition, deduplicate, align_documents, gate)
on the SeaweedFS server; the earlier attempt's score outputs are written as that attempt left them."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest

from bitextflow import records
from bitextflow.catalog.incremental import previous_release
from bitextflow.catalog.releases import publish_release
from bitextflow.catalog.status import collect_counts
from bitextflow.config import load_pair_config
from bitextflow.errors import GateFailed
from bitextflow.stages.registry import REGISTRY, run_context, stored_inputs
from bitextflow.stages.release import release_extras
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.tables import read_tables, write_table
from tests.support import ROOT, through_partitions

RUN_ID = "scheduled__2026-11-28T00:00:00+00:00"
TEXTS = {
    "install": ("Install Debian 12 bookworm with the netinst image on amd64.", "Instale Debian 12 bookworm con la imagen netinst en amd64."),
    "apt": ("The apt-get 2.6 tool fetches packages from mirrors.", "La herramienta apt-get 2.6 obtiene paquetes de las réplicas."),
    "kernel": ("Linux 6.1 kernel modules load through modprobe and udev.", "Los módulos del núcleo Linux 6.1 se cargan con modprobe y udev."),
    "boot": ("GRUB 2.06 shows the boot menu for five seconds.", "GRUB 2.06 muestra el menú de arranque durante cinco segundos."),
    "network": ("NetworkManager 1.42 configures wired and wireless links.", "NetworkManager 1.42 configura enlaces cableados e inalámbricos."),
}  # fmt: skip


def documents(pages: dict[str, tuple[int, list[str]]]) -> pd.DataFrame:
    """Each site's pages in English and Spanish, in the site partition the attempt's P puts it in."""
    rows = []
    for site, (partition, names) in pages.items():
        for name in names:
            for index, language in enumerate(("en", "es")):
                paragraph = {"type": "text", "text": TEXTS[name][index], "language": language,
                             "boilerplate": False, "out_of_language": False, "terms": []}  # fmt: skip
                rows.append({"doc_id": f"{site}-{name}-{language}", "url": f"http://{site}.test/{language}/{name}.html",
                             "language": language, "paragraphs": [paragraph], "images": [], "repairs": [],
                             "language_set": [], "partition": partition})  # fmt: skip
    return pd.DataFrame([{field.name: row.get(field.name) for field in records.DOCUMENTS} for row in rows])


def scored(ctx, document_pair_keys: list[str]) -> list[str]:
    """Score outputs as that attempt's score tasks left them, one per document-pair shard."""
    empty = records.SENTENCE_PAIRS.empty_table().to_pandas()
    names = [key.rsplit("/", 1)[1].replace("docpairs-", "sentpairs-") for key in document_pair_keys]
    return [write_table(ctx.store, ctx.key("score", name), empty, records.SENTENCE_PAIRS) for name in names]


@pytest.fixture(scope="module")
def cleared_run(s3_server):
    """Attempt 1: P = 8, one document pair per shard, sites in partitions 1 and 5. The operator then sets P = 4 and
    25 pairs per shard, drops a page of the first site and clears the run: attempt 2 (same run id) has partitions 1
    and 2, one shard each. Shared by the tests of this module (two attempts take about 25 s)."""
    pair_config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    bucket = ObjectStore(StorageSettings.from_env(s3_server.env()), f"stale-{uuid.uuid4().hex[:8]}")
    bucket.ensure_bucket()
    first = run_context(
        pair_config.with_overrides({"extract.site_partitions": 8, "align.document_pairs_per_shard": 1}), bucket, RUN_ID
    )
    earlier = REGISTRY.run(
        first,
        "align_documents",
        through_partitions(first, documents({"one": (1, ["install", "apt", "kernel"]), "five": (5, ["boot", "network"])})),
    )
    scored(first, earlier)
    overrides = {"extract.site_partitions": 4, "align.document_pairs_per_shard": 25, "gate.min_sentence_pairs": 0}
    ctx = run_context(pair_config.with_overrides(overrides), bucket, RUN_ID)
    latest = REGISTRY.run(
        ctx,
        "align_documents",
        through_partitions(ctx, documents({"one": (1, ["install", "apt"]), "five": (2, ["boot", "network"])})),
    )
    assert (
        len(earlier) == 5
        and len(latest) == 2
        and not set(latest) - set(earlier) - {ctx.key("align_documents", "docpairs-part-00002-00000.parquet")}
    )
    return ctx, latest, scored(ctx, latest)


def test_later_stages_read_the_latest_attempts_shards(cleared_run) -> None:
    ctx, document_pairs, scores = cleared_run
    assert stored_inputs(ctx, REGISTRY.get("align_sentences")) == document_pairs
    assert stored_inputs(ctx, REGISTRY.get("classify")) == scores, "the GPU step reads the latest attempt's score shards"


def test_the_release_takes_the_latest_attempts_document_pairs_sentences_and_gates(cleared_run) -> None:
    ctx, document_pairs, _scores = cleared_run
    extras = release_extras(ctx)
    assert extras.document_pairs.keys == document_pairs
    released = read_tables(ctx.store, extras.document_pairs.keys, records.DOCUMENT_PAIRS)
    pages = [("one", "install"), ("one", "apt"), ("five", "boot"), ("five", "network")]
    assert sorted(released["url_a"]) == sorted(f"http://{site}.test/en/{name}.html" for site, name in pages)
    assert extras.sentences.keys == [ctx.key("partitions", f"part-0000{p}.sentences.parquet") for p in (1, 2)]
    (document_pairs_gate,) = [verdict for verdict in extras.gates if verdict.gate == "document_pairs"]
    assert document_pairs_gate.suites == 2, "the suites of partitions 1 and 2, not of the earlier attempt's 5"
    assert not [v for v in extras.gates if "part-00005" in v.data_docs]


def test_counts_and_the_gates_document_pairs_are_the_latest_attempts(cleared_run) -> None:
    ctx, document_pairs, scores = cleared_run
    counts = {c.stage: c for c in collect_counts(ctx.store, ctx.config.pair, ctx.run_id, REGISTRY.names())}
    assert counts["align_documents"].items_in == 8, "the four page pairs of the latest attempt, not the earlier five"
    classified = [write_table(ctx.store, ctx.key("classify", key.rsplit("/", 1)[1]), records.CLASSIFIED_SENTENCE_PAIRS.empty_table().to_pandas(), records.CLASSIFIED_SENTENCE_PAIRS) for key in scores]  # fmt: skip
    strict = run_context(ctx.config.with_overrides({"gate.min_document_pairs": 5}), ctx.store, ctx.run_id)
    with pytest.raises(GateFailed, match=r"expect_column_values_to_be_between\(document_pairs\)"):
        REGISTRY.run(strict, "gate", classified)  # 4 document pairs now; the earlier attempt's 5 made it 7 or more


def test_an_incremental_run_compares_with_what_the_released_run_paired_last(cleared_run) -> None:
    ctx, _document_pairs, _scores = cleared_run
    publish_release(ctx.store, ctx.config.pair, records.CLASSIFIED_SENTENCE_PAIRS.empty_table().to_pandas(), [], RUN_ID, None)
    previous = previous_release(ctx.store, ctx.config.pair, "scheduled__next", 1, 4)
    assert previous is not None
    assert previous.page_pairs == {(f"http://one.test/en/{n}.html", f"http://one.test/es/{n}.html") for n in ("install", "apt")}
