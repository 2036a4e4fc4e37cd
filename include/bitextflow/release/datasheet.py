"""The datasheet of a release (``datasheet.md``), after Gebru et al., "Datasheets for Datasets" (CACM 2021).

Written from what the run knows: the pair config (seeds, domain terms, every threshold), the release
statistics and stage counts, and the licences of the sources where they can be read. For the local
demo site (served on loopback, built from Debian documentation packages by the ``bitextflow-local`` tools)
the licences come from each package's ``copyright`` file; for any other site the datasheet says the
licence is unknown, which is the honest answer for crawled web text.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bitextflow.config import PairConfig
from bitextflow.release.guards import guards_section
from bitextflow.settings import cache_dir as cache_folder

_STAMP = "site.stamp.json"
_LICENCE_SENTENCE = re.compile(r"[^.]*\blicen[cs]ed?\b[^.]*\.", re.IGNORECASE)


@dataclass(frozen=True)
class SourceLicence:
    package: str
    version: str
    licence: str
    copyright: str


def _copyright_file(cache_dir: Path, package: str) -> Path:
    return cache_dir / "extracted" / package / "usr" / "share" / "doc" / package / "copyright"


def read_licence(path: Path) -> tuple[str, str]:
    """(licence, copyright holders) from a Debian ``copyright`` file.

    Machine-readable files (DEP-5) give the ``License:`` and ``Copyright:`` fields of the first
    ``Files:`` paragraph; free-form files give the first sentence that says how the work is licensed.
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    fields: dict[str, str] = {}
    for paragraph in text.split("\n\n"):
        if paragraph.startswith("Files:") or "\nFiles:" in paragraph:
            for name in ("License", "Copyright"):
                match = re.search(rf"^{name}:\s*(.+)$", paragraph, re.MULTILINE)
                if match:
                    fields[name] = match.group(1).strip()
            break
    if "License" in fields:
        return fields["License"], fields.get("Copyright", "")
    sentence = _LICENCE_SENTENCE.search(" ".join(text.split()))
    first = " ".join(text.split(".")[0].split())
    return (sentence.group(0).strip() if sentence else "see the package's copyright file"), first


def local_site_licences(config: PairConfig, cache_dir: Path | None = None) -> list[SourceLicence]:
    """Licences of the Debian packages the local demo site is built from, when the pair crawls it.

    Empty when no seed is on a loopback address or the site was never built in ``cache_dir`` (default:
    ``$BITEXTFLOW_SITE_CACHE``, else the local site's default cache).
    """
    if not any(_loopback(str(seed)) for seed in config.crawl.seeds):
        return []
    cache = cache_dir or Path(os.environ.get("BITEXTFLOW_SITE_CACHE") or cache_folder("localsite"))  # set by the local stack
    stamp = cache / _STAMP
    if not stamp.is_file():
        return []
    packages: Mapping[str, str] = json.loads(stamp.read_text())["packages"]
    licences = []
    for package, version in sorted(packages.items()):
        path = _copyright_file(cache, package)
        licence, holders = read_licence(path) if path.is_file() else ("unknown (no copyright file in the cache)", "")
        licences.append(SourceLicence(package, version, licence, holders))
    return licences


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _section_table(values: Mapping[str, Any]) -> list[str]:
    lines = ["| option | value |", "|---|---|"]
    lines.extend(f"| `{name}` | `{json.dumps(value, ensure_ascii=False)}` |" for name, value in values.items())
    return lines


def evaluation_section(stats: Mapping[str, Any]) -> list[str]:
    """The manual evaluation this release cites (of an earlier version: a release cannot be judged before it exists)."""
    evaluation = stats.get("manual_evaluation")
    if not evaluation or evaluation["overall"]["precision"] is None:
        return []
    overall = evaluation["overall"]
    return [
        "## Manual evaluation",
        "",
        f"{overall['judged']} sentence pairs of release v{evaluation['version']}, drawn at random (seed {evaluation['seed']}, "
        f"stratified by `{evaluation['score_column']}` band and site), were judged by hand by {len(evaluation['annotators'])} "
        f"people from {evaluation['labelled_from'][:10]} to {evaluation['labelled_until'][:10]}: estimated precision "
        f"{overall['precision']:.3f}, 95% interval {overall['low']:.3f}-{overall['high']:.3f} ({evaluation['method']}; "
        f"{overall['unsure']} pairs not sure, left out). This version was built with the same pipeline; its own "
        f"figure comes from judging it (`bitextflow releases evaluation`, docs/evaluation.md).",
        "",
    ]


def render_datasheet(
    config: PairConfig, version: int, run_id: str, stats: Mapping[str, Any], licences: list[SourceLicence]
) -> str:
    """The datasheet as Markdown."""
    data = config.model_dump(mode="json")
    src, tgt = config.source, config.target
    hosts = stats["side_a"]["top_hosts"]
    lines = [
        f"# Datasheet: {config.pair} parallel corpus, v{version}",
        "",
        f"Produced by bitextflow, run `{run_id}`. {config.description}".rstrip(),
        "",
        "## Motivation",
        f"A domain-specific ({config.domain.name}) {src}-{tgt} parallel corpus for training and adapting machine "
        "translation and language models, with a monolingual corpus per language from the same documents.",
        "",
        "## Composition",
        f"- {stats['sentence_pairs']} sentence pairs ({stats['unique_pairs']} unique) from {stats['document_pairs']} document pairs.",
        f"- {stats['side_a']['tokens']} {src} tokens, {stats['side_b']['tokens']} {tgt} tokens (words: whitespace tokens, ICU word boundaries in scripts without spaces).",
        *(f"- {n} monolingual {lang} sentences (deduplicated)." for lang, n in stats.get("monolingual_sentences", {}).items()),
        *(
            f"- {f['documents']} monolingual {lang} documents, {f['words']} words (text-quality labels: "
            + (", ".join(f"{label} {n}" for label, n in f["quality_labels"].items()) or "none")
            + ")."
            for lang, f in stats.get("documents", {}).items()
        ),
        "- Files: `<pair>.tsv` (Bitextor columns), `<pair>.tmx` (TMX 1.4), `<pair>.jsonl` (every field), "
        "`document_pairs.jsonl`, `documents.<lang>.jsonl.gz` (the monolingual corpus: one annotated document a line), "
        "`mono.<lang>.txt` (its sentences), `stats.json`, `report.html`, `gate.json`, `release.json`.",
        "",
        "## Collection process",
        "Seeds:",
        *(f"- {seed}" for seed in data["crawl"]["seeds"]),
        "",
        f"Focused crawl (strategy `{config.crawl.strategy}`, at most {config.crawl.max_pages} pages, robots.txt obeyed, "
        f"user agent `{config.crawl.user_agent}`). Sites in the release (sentence pairs):",
        *(f"- {h['host']}: {h['sentence_pairs']}" for h in hosts),
        "",
        "## Preprocessing, alignment and filtering",
        "Extraction (trafilatura, CLD2 language identification, ILSP-FC domain relevance, near-duplicate removal), "
        f"URL-based document alignment, `{config.align.sentence_aligner}` sentence alignment, hard rules, domain "
        "classification and a Great Expectations gate. Thresholds used:",
        "",
    ]
    if stats.get("documents"):
        lines.extend(
            [
                "The monolingual documents are every page extraction kept in one of the pair's languages, aligned or "
                "not, annotated (language and its score, text quality per paragraph and per document in the MaCoCu "
                "scheme, domain relevance and the classifier's distribution, near-duplicate cluster size, personal "
                "data replaced, the opt-outs passed, document pairs), then filtered by the `mono` thresholds below; "
                "each line keeps its annotations, so the corpus can be filtered again (docs/release.md). The "
                "distribution is the mean over a document's sentences in classified sentence pairs or, for a page "
                "without one, over at most `mono.classifier_sentences` of its own (`domain.classifier_from`).",
                "",
            ]
        )
    for section in ("extract", "align", "score", "domain", "gate", "mono"):
        values = {k: v for k, v in data[section].items() if k != "terms"}
        lines.extend([f"### {section}", "", *_section_table(values), ""])
    lines.append("Domain terms (weights):")
    lines.extend(f"- {lang}: " + ", ".join(f"{t} ({w})" for t, w in terms.items()) for lang, terms in config.domain.terms.items())
    lines.extend(["", "Counts per stage (in / kept / dropped by reason):", ""])
    lines.extend(["| stage | in | kept | dropped |", "|---|---|---|---|"])
    for counts in stats["stage_counts"]:
        reasons = ", ".join(f"{r}={n}" for r, n in counts["dropped"].items()) or "-"
        lines.append(f"| {counts['stage']} | {counts['in']} | {counts['kept']} | {reasons} |")
    lines.extend(["", *guards_section(stats, config), *evaluation_section(stats), "## Licences", ""])
    if licences:
        lines.append("The local demo site is built from these Debian packages (licences from their copyright files):")
        lines.append("")
        lines.extend(["| package | version | licence | copyright |", "|---|---|---|---|"])
        lines.extend(f"| {lic.package} | {lic.version} | {lic.licence} | {lic.copyright} |" for lic in licences)
    else:
        lines.append(
            "Unknown: the texts belong to the crawled sites; check each site's terms before redistributing. "
            "This corpus is released for research use of the text as found."
        )
    lines.extend(
        [
            "",
            "## Uses and limits",
            "Sentence pairs come from pages whose URLs mark them as translations; alignment errors and machine-translated "
            "pages can remain (see the score histograms in `report.html`). Not for evaluation sets without review.",
            "",
            "## Maintenance",
            f"Each run publishes a new version under `releases/{config.pair}/v<N>/`; versions are tagged "
            f"`{config.pair}-v<N>` in the DVC data registry (docs/release.md).",
            "",
        ]
    )
    return "\n".join(lines)
