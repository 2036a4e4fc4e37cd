"""Takedowns and personal data, end to end on the real S3 server: a tiny run gated and released through the stage
registry, its released TSV, TMX, JSONL and monolingual files read back; a published release redacted by the CLI.

The inputs are a few hand-made sentence pairs and sentences written to the store where the classify, align_documents
and partition stages would have left them: the guards sit in the gate and the release, which is all these run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import uuid
from pathlib import Path

import pandas as pd
import pytest
import yaml

from bitextflow import records
from bitextflow.catalog.registry import DataRegistry, release_tag
from bitextflow.catalog.releases import MANIFEST_NAME, list_releases, release_prefix
from bitextflow.catalog.takedowns import add_takedowns, read_takedowns
from bitextflow.cli import main
from bitextflow.config import load_pair_config
from bitextflow.redaction import TakedownEntry
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectStore
from bitextflow.storage.tables import write_table
from tests.support import ROOT

PAIR = "en-es"
RUN = "manual__guards"
SITE = "http://site.example"

# (page, English, Spanish): what each pair holds is in its name
PAIRS = {
    "plain": ("guide", "The package manager installs every dependency.", "El gestor de paquetes instala cada dependencia."),
    "email": (
        "contact",
        "Write to Ana.Lopez@Example.com or to help@example.org for support.",
        "Escriba a ana.lopez@example.com o a help@example.org para obtener ayuda.",
    ),
    "phone": (
        "contact",
        "Call the office on +34 912 345 678 before noon.",
        "Llame a la oficina al 912 34 56 78 antes del mediodía.",
    ),
    "bank": (
        "donate",
        "Send donations to IBAN DE89 3704 0044 0532 0130 00 or card 4111 1111 1111 1111.",
        "Envíe donativos al IBAN DE89 3704 0044 0532 0130 00 o a la tarjeta 4111-1111-1111-1111.",
    ),
    "ip": (
        "network",
        "The mirror at 203.0.113.42 and 2001:db8::7 answers first.",
        "El espejo en 203.0.113.42 y 2001:db8::7 responde primero.",
    ),
    "listed_page": ("secret", "This page was removed at the owner's request.", "Esta página se retiró a petición del dueño."),
    "listed_prefix": (
        "private/notes",
        "These private notes should not be published.",
        "Estas notas privadas no deberían publicarse.",
    ),
    "listed_text": ("guide", "The author asked us to remove this sentence.", "La autora nos pidió retirar esta frase."),
}
HOST_PAIR = ("http://blocked.example/en/a.html", "http://blocked.example/es/a.html",
             "Everything on this host was taken down.", "Todo lo de este servidor se retiró.")  # fmt: skip
PERSONAL_VALUES = [
    "Ana.Lopez@Example.com", "ana.lopez@example.com", "help@example.org", "912 345 678", "912 34 56 78",
    "DE89 3704 0044 0532 0130 00", "4111 1111 1111 1111", "4111-1111-1111-1111", "203.0.113.42", "2001:db8::7",
]  # fmt: skip
#: Both sides of the pairs the takedown list names (a pair goes whole when either page or either sentence is listed).
REMOVED_PAIR_TEXTS = [PAIRS[name][i] for name in ("listed_page", "listed_prefix", "listed_text") for i in (1, 2)] + list(
    HOST_PAIR[2:]
)
#: The sentences of listed pages, and the listed sentence: out of the monolingual corpus too (the other language's
#: page of a pair is not listed, so its sentence stays there).
LISTED_SENTENCES = [PAIRS["listed_page"][1], PAIRS["listed_prefix"][2], PAIRS["listed_text"][1], *HOST_PAIR[2:]]
UNPAIRED_SENTENCE = "Only the monolingual corpus held this sentence of the listed page."


def url(language: str, page: str) -> str:
    return f"{SITE}/{language}/{page}.html"


def classified_pairs() -> pd.DataFrame:
    rows = [(url("en", page), url("es", page), en, es) for page, en, es in PAIRS.values()] + [HOST_PAIR]
    frame = pd.DataFrame(rows, columns=["url_a", "url_b", "text_a", "text_b"])
    return frame.assign(
        lang_a="en", lang_b="es", alignment_score=0.8, rule_tags="", domain_relevance=0.5, domain_terms="",
        pair_hash=[hashlib.sha1(f"{a}\t{b}".encode()).hexdigest() for a, b in zip(frame.text_a, frame.text_b, strict=True)],
        domain_probs_a="", domain_probs_b="",
    )  # fmt: skip


def document_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    pages = pairs[["url_a", "url_b"]].drop_duplicates().reset_index(drop=True)
    return pages.assign(doc_id_a=[f"a{i}" for i in pages.index], doc_id_b=[f"b{i}" for i in pages.index], method="url",
                        score=1.0, partition=0)  # fmt: skip


def run_sentences(pairs: pd.DataFrame) -> pd.DataFrame:
    """Each pair's sentences as the extract stage's sentences, plus one sentence of the listed page found in no pair."""
    rows = [
        (u, lang, text)
        for side, lang in (("a", "en"), ("b", "es"))
        for u, text in zip(pairs[f"url_{side}"], pairs[f"text_{side}"], strict=True)
    ]
    rows.append((url("en", "secret"), "en", UNPAIRED_SENTENCE))
    return pd.DataFrame(
        {
            "doc_id": [hashlib.sha1(u.encode()).hexdigest()[:8] for u, _, _ in rows], "url": [u for u, _, _ in rows],
            "language": [lang for _, lang, _ in rows], "paragraph_index": 0, "paragraph_type": "p",
            "sentence_index": range(len(rows)), "text": [text for _, _, text in rows], "duplicate": False, "partition": 0,
        }
    )  # fmt: skip


def takedown_entries() -> list[TakedownEntry]:
    return [
        TakedownEntry(url="https://SITE.example/en/secret.html#top", who="Site owner", when="2026-11-30", why="copyright"),
        TakedownEntry(prefix=f"{SITE}/es/private/", who="Site owner", when="2026-11-30", why="privacy"),
        TakedownEntry(host="blocked.example", who="Blocked Ltd", when="2026-12-01", why="copyright"),
        TakedownEntry(text="the AUTHOR asked us to remove this sentence", who="An author", when="2026-12-02", why="privacy"),
    ]


@pytest.fixture
def deployment(store: ObjectStore, tmp_path: Path):
    """A fresh bucket, and the en-es config pointed at it (no registry: the redact test records on its own)."""
    bucket = ObjectStore(store.settings, f"guards-{uuid.uuid4().hex[:10]}")
    bucket.ensure_bucket()
    data = yaml.safe_load((ROOT / "include" / "pairs" / "en-es.yaml").read_text())
    data["storage"] = {"bucket": bucket.bucket}
    data["release"] = {"record_in_registry": False}
    data["gate"].update(min_sentence_pairs=1, max_volume_drop=None, max_other_language_share=1.0)
    pairs_dir = tmp_path / "pairs"
    pairs_dir.mkdir()
    (pairs_dir / "en-es.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    return bucket, pairs_dir


def released(store: ObjectStore, version: int) -> dict[str, str]:
    """Every file of a release as text (the monolingual documents decompressed)."""
    prefix = release_prefix(PAIR, version)
    names = store.get_json(prefix + MANIFEST_NAME)["files"]
    raw = {name: store.get_bytes(prefix + name) for name in names}
    return {name: (gzip.decompress(data) if name.endswith(".gz") else data).decode("utf-8") for name, data in raw.items()}


def assert_published_safely(files: dict[str, str], pages_traced: bool = True) -> None:
    """No personal value, no taken-down page or pair in the corpus files; no listed sentence in the monolingual corpus
    (nor the listed page's sentence that no pair held, when the run's sentences were there to trace it)."""
    parallel = [f"{PAIR}.tsv", f"{PAIR}.tmx", f"{PAIR}.jsonl", "document_pairs.jsonl"]
    monolingual = ["mono.en.txt", "mono.es.txt"]
    assert set(parallel + monolingual) <= set(files)
    for name in parallel + monolingual:
        for value in [*PERSONAL_VALUES, *LISTED_SENTENCES, "blocked.example", "/secret.html", "/private/"]:
            assert value.casefold() not in files[name].casefold(), f"{value!r} is in {name}"
    for name in parallel:
        for value in REMOVED_PAIR_TEXTS:
            assert value not in files[name], f"{value!r} is in {name}"
    assert (UNPAIRED_SENTENCE in files["mono.en.txt"]) is not pages_traced
    for name in ("datasheet.md", "stats.json", "report.html"):
        for value in [*PERSONAL_VALUES, *REMOVED_PAIR_TEXTS, UNPAIRED_SENTENCE]:
            assert value not in files[name], f"{value!r} is in {name}"


def test_a_release_holds_no_taken_down_item_and_no_personal_data(deployment, monkeypatch) -> None:
    store, pairs_dir = deployment
    config = load_pair_config(pairs_dir / "en-es.yaml")
    ctx = run_context(config, store, RUN)
    pairs = classified_pairs()
    add_takedowns(store, takedown_entries())
    classified = write_table(
        store, ctx.key("classify", "sentpairs-part-00000-00000.parquet"), pairs, records.CLASSIFIED_SENTENCE_PAIRS
    )
    write_table(
        store, ctx.key("align_documents", "docpairs-part-00000-00000.parquet"), document_pairs(pairs), records.DOCUMENT_PAIRS
    )
    write_table(store, ctx.key("partitions", "part-00000.sentences.parquet"), run_sentences(pairs), records.SENTENCES)

    gated = REGISTRY.run(ctx, "gate", [classified])
    published = REGISTRY.run(ctx, "release", gated)

    files = released(store, published["version"])
    assert_published_safely(files)
    jsonl = [json.loads(line) for line in files[f"{PAIR}.jsonl"].splitlines()]
    by_page = {row["url_a"].rsplit("/", 1)[-1]: row for row in jsonl}
    assert len(jsonl) == 5 and set(by_page) == {"guide.html", "contact.html", "donate.html", "network.html"}
    email = next(row for row in jsonl if "[EMAIL_1]" in row["text_a"])
    assert (email["text_a"], email["text_b"]) == (
        "Write to [EMAIL_1] or to [EMAIL_2] for support.", "Escriba a [EMAIL_1] o a [EMAIL_2] para obtener ayuda.",
    )  # fmt: skip
    phone = next(row for row in jsonl if row["text_a"].startswith("Call"))
    assert (phone["text_a"], phone["text_b"]) == (
        "Call the office on [PHONE_1] before noon.", "Llame a la oficina al [PHONE_1] antes del mediodía.",
    )  # fmt: skip
    assert by_page["donate.html"]["text_b"] == "Envíe donativos al IBAN [IBAN_1] o a la tarjeta [CARD_1]."
    assert by_page["network.html"]["text_a"] == "The mirror at [IP_1] and [IP_2] answers first."
    assert "[EMAIL_1]" in files[f"{PAIR}.tsv"] and "[IBAN_1]" in files[f"{PAIR}.tmx"]
    assert "[EMAIL_1]" in files["mono.en.txt"] and "[PHONE_1]" in files["mono.es.txt"]

    stats = json.loads(files["stats.json"])
    gate = next(c for c in stats["stage_counts"] if c["stage"] == "gate")
    assert gate["dropped"] == {"takedown_host": 1, "takedown_prefix": 1, "takedown_text": 1, "takedown_url": 1}
    assert gate["repaired"] == {"personal_data_card": 1, "personal_data_email": 1, "personal_data_iban": 1,
                                "personal_data_ip": 1, "personal_data_phone": 1}  # fmt: skip
    guards = stats["guards"]
    assert guards["takedowns"]["takedown_url"] == {
        "total": 4, "by_stage": {"gate": 1, "release_monolingual": 2, "release_document_pairs": 1},
    }  # fmt: skip
    assert guards["personal_data"]["email"]["replaced"]["by_stage"] == {"gate": 1, "release_monolingual": 2}
    assert guards["opt_outs"]["optout_robots"] == {"total": 0, "by_stage": {}}
    assert guards["takedowns"]["takedown_host"]["by_stage"]["release_document_pairs"] == 1
    datasheet = files["datasheet.md"]
    assert "## Publication guards" in datasheet
    assert "| opt-out | `optout_tdmrep`" in datasheet and "| takedown | `takedown_url`: its page is listed | 4 |" in datasheet
    assert re.search(r"\| email \| 3 \| gate 1, release_monolingual 2 \| 0 \| - \|", datasheet)


def test_redact_publishes_a_new_version_without_the_listed_items(deployment, tmp_path: Path, monkeypatch) -> None:
    store, pairs_dir = deployment
    config = load_pair_config(pairs_dir / "en-es.yaml")
    ctx = run_context(config, store, RUN)
    pairs = classified_pairs()
    keys = [
        write_table(store, ctx.key("gate", "part-00000.sentence_pairs.parquet"), pairs, records.CLASSIFIED_SENTENCE_PAIRS),
    ]
    store.put_json(ctx.key("gate", "sentence_pairs.report.json"), {"suite": "sentence_pairs", "success": True, "failures": []})
    write_table(
        store, ctx.key("align_documents", "docpairs-part-00000-00000.parquet"), document_pairs(pairs), records.DOCUMENT_PAIRS
    )
    sentences_key = write_table(
        store, ctx.key("partitions", "part-00000.sentences.parquet"), run_sentences(pairs), records.SENTENCES
    )
    # published before the takedown list held anything and before personal data was screened: v1 holds it all
    unscreened = ctx.config.with_overrides({"personal_data.types": []})
    first = REGISTRY.run(run_context(unscreened, store, RUN), "release", keys)
    assert "help@example.org" in released(store, first["version"])[f"{PAIR}.tsv"]
    store.delete_prefix(sentences_key)  # the run's outputs are gone: the monolingual corpus is all there is
    add_takedowns(store, [*takedown_entries()[:2], takedown_entries()[3]])
    add = ["takedowns", "add", "--pair", PAIR, "--pairs-dir", str(pairs_dir), "--host", "blocked.example"]
    assert main([*add, "--who", "Blocked Ltd", "--why", "copyright", "--when", "2026-12-01"]) == 0
    registry = tmp_path / "registry"
    monkeypatch.setenv("BITEXTFLOW_REGISTRY", str(registry))
    record = ["--set", "release.record_in_registry=true"]

    command = ["releases", "redact", "--pair", PAIR, "--pairs-dir", str(pairs_dir), "--version", str(first["version"])]
    assert main([*command, *record]) == 0
    again = main(command)  # the same list: the same version, nothing published

    versions = list_releases(store, PAIR)
    assert [v.version for v in versions] == [1, 2] and again == 0 and versions[1].run_id == RUN
    files = released(store, 2)
    assert_published_safely(files, pages_traced=False)
    stats = json.loads(files["stats.json"])
    assert stats["sentence_pairs"] == 5
    assert stats["redaction"] == {
        "source_version": 1, "removed_sentence_pairs": 4, "removed_by_why": {"copyright": 2, "privacy": 2},
        "takedown_entries": 4, "takedown_list_sha256": read_takedowns(store).sha256, "monolingual_traced": False,
    }  # fmt: skip
    redact = next(c for c in stats["stage_counts"] if c["stage"] == "redact_v1")
    assert redact["in"] == 9 and redact["kept"] == 5 and redact["repaired"]["personal_data_email"] == 1
    assert "This version is v1 redacted" in files["datasheet.md"]
    tags = DataRegistry(str(registry), store.settings, f"s3://{store.bucket}/dvc", store.bucket).tags()
    assert release_tag(store.bucket, PAIR, 2) in tags
