"""Ingesting existing WARC files (``crawl.warcs``) and de-duplicating documents across extract shards.

Runs on the real SeaweedFS server: WARCs written by our own crawler's writer and by warcio the way other
crawlers write them (response records only, gzip per record) are uploaded, ingested, extracted and
de-duplicated before document alignment.


The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_ingest_dedup.py's.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bitextflow.config import ExtractConfig, load_pair_config
from bitextflow.errors import ConfigError
from bitextflow.extract import extract_shard
from bitextflow.extract.dedup import deduplicate_run, shingle_hashes
from tests.support import ROOT
from tests.unit.test_extract import html_page, make_warc

GUIDE_EN = [
    "Before you upgrade the system, read the release notes for the version you are moving to.",
    "A full backup of your home directory and of the configuration files is strongly advised.",
    "The package manager resolves dependencies and downloads the archives from the mirrors.",
    "Third party repositories may hold packages that conflict with the ones of the distribution.",
    "Disable them during the upgrade and enable them again once the new release is running.",
    "Services are restarted automatically, but a reboot is needed to run the new kernel.",
    "If the upgrade stops half way, run the package manager again: it continues where it stopped.",
    "Problems and their solutions are collected in the troubleshooting chapter of this guide.",
]
GUIDE_ES = [
    "Antes de actualizar el sistema, lea las notas de publicación de la versión a la que pasa.",
    "Se recomienda encarecidamente una copia de seguridad del directorio personal y de la configuración.",
    "El gestor de paquetes resuelve las dependencias y descarga los archivos de las réplicas.",
    "Los repositorios de terceros pueden contener paquetes que entran en conflicto con la distribución.",
    "Desactívelos durante la actualización y vuelva a activarlos cuando la nueva versión funcione.",
]
NETWORK_EN = [
    "The network interfaces are described in a single configuration file read at boot time.",
    "Each interface has a name, an address family and a method such as static or dhcp.",
    "A static address needs the address itself, the netmask and the gateway of the network.",
    "Wireless interfaces also need the name of the network and the passphrase that protects it.",
]


def page(paragraphs: list[str], title: str) -> bytes:
    return html_page(paragraphs, title=title).encode()


def test_seeds_or_warcs_but_not_both():
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    with pytest.raises(ConfigError, match="field crawl.seeds: Value error, give at least one seed URL"):
        config.with_overrides({"crawl.seeds": []})
    with pytest.raises(ConfigError, match="crawl.warcs is set too; to ingest WARCs without crawling set crawl.seeds to"):
        config.with_overrides({"crawl.warcs": ["ingest/"]})
    with pytest.raises(ConfigError, match="names no key"):
        config.with_overrides({"crawl.seeds": [], "crawl.warcs": ["s3://bucket-only"]})


# -- cross-shard de-duplication without services ----------------------------------------------------
def extracted(tmp_path: Path, name: str, pages: list[tuple[str, str, bytes]]) -> pd.DataFrame:
    path = tmp_path / f"{name}.warc.gz"
    path.write_bytes(make_warc(pages))
    result = extract_shard(
        path, tmp_path / name, warc_key=f"run/{name}.warc.gz",
        languages={"en", "es"}, config=ExtractConfig(min_sentence_tokens=3),
    )  # fmt: skip
    return pq.read_table(result.documents).to_pandas()


def test_near_duplicates_need_the_same_language_and_enough_similarity(tmp_path):
    first = extracted(
        tmp_path,
        "a",
        [
            ("http://s/en/1.html", "text/html", page(GUIDE_EN, "Guide")),
            ("http://s/es/1.html", "text/html", page(GUIDE_ES, "Guía")),
        ],
    )
    second = extracted(
        tmp_path, "b",
        [
            ("http://s/en/2.html", "text/html", page(GUIDE_EN[1:], "Guide")),  # 7 of 8 sentences: near-duplicate
            ("http://s/en/3.html", "text/html", page(GUIDE_EN[:4] + NETWORK_EN, "Guide")),  # half the same: not one
            ("http://s/es/3.html", "text/html", page(GUIDE_EN[:2] + GUIDE_ES, "Guía")),  # other language: not one
        ],
    )  # fmt: skip
    result = deduplicate_run(pd.concat([second, first], ignore_index=True))
    assert list(result.removed["url"]) == ["http://s/en/2.html"]
    assert result.removed["duplicate_of"].iloc[0] == first[first["url"] == "http://s/en/1.html"]["doc_id"].iloc[0]
    assert list(result.kept["url"]) == ["http://s/en/3.html", "http://s/es/3.html", "http://s/en/1.html", "http://s/es/1.html"]
    assert result.counts.items_in == 5 and result.counts.kept == 4 and dict(result.counts.dropped) == {"near_duplicate_lsh": 1}
    strict = deduplicate_run(pd.concat([first, second], ignore_index=True), threshold=0.95)
    assert strict.counts.kept == 5


def test_a_url_in_two_shards_is_kept_once(tmp_path):
    first = extracted(tmp_path, "a", [("http://s/en/1.html", "text/html", page(GUIDE_EN, "Guide"))])
    second = extracted(tmp_path, "b", [("http://s/en/1.html", "text/html", page(NETWORK_EN, "Network"))])  # changed since
    result = deduplicate_run(pd.concat([first, second], ignore_index=True))
    assert list(result.kept["warc_key"]) == ["run/a.warc.gz"]
    assert list(result.removed["drop_reason"]) == ["duplicate_url_cross_shard"]
    assert list(result.removed["duplicate_of"]) == list(first["doc_id"])


def test_shingles_ignore_everything_but_letters_and_work_without_spaces():
    assert (shingle_hashes("installthepackage") == shingle_hashes("installthepackage")).all()
    assert len(shingle_hashes("abc")) == 1, "a text shorter than a shingle is one shingle"
    chinese = shingle_hashes("安装软件包之前请先阅读发行说明")
    assert len(chinese) == len("安装软件包之前请先阅读发行说明") - 4
    assert len(shingle_hashes("")) == 0


def test_empty_run_deduplicates_to_nothing():
    empty = pd.DataFrame(
        {column: pd.Series(dtype=object) for column in ("doc_id", "warc_key", "warc_offset", "language", "paragraphs")}
    )
    result = deduplicate_run(empty)
    assert result.kept.empty and result.removed.empty and result.counts.items_in == 0


def test_a_partly_translated_page_is_no_copy_of_its_original(tmp_path):
    """An unfinished translation: the original's text and one paragraph translated, so identified as the original's
    language. Alignment pairs it with its original (docs/align.md, "Partly translated pages"); both levels of
    de-duplication used to keep only the longer of the two."""
    original = ("http://s/en/1.html", "text/html", page(GUIDE_EN, "Guide"))
    partly = ("http://s/es/1.html", "text/html", page([*GUIDE_EN, GUIDE_ES[0]], "Guía"))
    one_shard = extracted(tmp_path, "a", [original, partly])
    assert sorted(one_shard["url"]) == ["http://s/en/1.html", "http://s/es/1.html"]
    assert list(one_shard["language"]) == ["en", "en"]
    languages = [{p["language"] for p in paragraphs if p["type"] != "title"} for paragraphs in one_shard["paragraphs"]]
    assert "es" in languages[1] and "es" not in languages[0]
    result = deduplicate_run(pd.concat([extracted(tmp_path, "b", [original]), extracted(tmp_path, "c", [partly])]))
    assert result.counts.kept == 2 and result.removed.empty
    # a copy of the partly translated page is still a copy
    copy = ("http://s/es/2.html", "text/html", page([*GUIDE_EN[1:], GUIDE_ES[0]], "Guía"))
    result = deduplicate_run(pd.concat([extracted(tmp_path, "d", [partly]), extracted(tmp_path, "e", [copy])]))
    assert list(result.removed["url"]) == ["http://s/es/2.html"]
