"""The HTML report of a release (``report.html``): figures and plots, one self-contained file.

Plots are drawn with matplotlib's Agg backend (no display needed) and embedded as base64 PNG, so the
report can be opened from S3, a laptop or a DVC checkout alike. It shows:

- token-length histograms of both sides and, for every numeric score column of the pairs (alignment,
  domain relevance and whatever scores the stages add, such as a Bicleaner score), a histogram and
  sample pairs at the lowest, median and highest score, so a reader sees what each band looks like; a
  score no pair has (a step that did not run) is said in words instead of an empty plot;
- yield per site: sentence pairs per host, next to the pages fetched from it;
- language distribution of fetched pages (crawl log) and domain distributions: the matched domain
  terms, every label column with few values and the mean of every probability-distribution column;
- per-stage counts: kept and dropped by reason;
- the crawl-efficiency curve (García-Romero et al., "Smart bilingual focused crawling"): pages of a
  released document pair found as a function of pages downloaded, in download order.

PNG files carry no timestamp (``metadata`` below), so the same inputs give the same report bytes.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: workers have no display

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from bitextflow.release.formats import host  # noqa: E402
from bitextflow.text.markup import plot_label  # noqa: E402

_PNG_METADATA = {"Software": None}
_MAX_LABELS = 20
# Columns that identify or carry text; never plotted as a distribution.
_NOT_DISTRIBUTIONS = {"url_a", "url_b", "text_a", "text_b", "lang_a", "lang_b", "pair_hash", "rule_tags", "domain_terms"}


def _png(figure: plt.Figure) -> str:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=80, metadata=_PNG_METADATA)
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _bar(title: str, counts: Mapping[str, float], xlabel: str) -> str:
    figure, axes = plt.subplots(figsize=(6, 0.3 * max(len(counts), 4) + 1))
    labels = list(counts)[::-1]
    axes.barh([plot_label(label) for label in labels], [counts[label] for label in labels], color="#4477aa")
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    return _png(figure)


def _length_histograms(stats: Mapping[str, Any], pair: str) -> str:
    figure, axes = plt.subplots(figsize=(7, 3))
    width = 0.4
    for offset, side, lang in ((-width / 2, "side_a", pair.split("-")[0]), (width / 2, "side_b", pair.split("-")[-1])):
        histogram = stats[side]["token_length_histogram"]
        positions = [i + offset for i in range(len(histogram["counts"]))]
        axes.bar(positions, histogram["counts"], width=width, label=lang)
    edges = stats["side_a"]["token_length_histogram"]["edges"]
    axes.set_xticks(
        range(len(edges)), [f"{e}+" if i == len(edges) - 1 else f"{e}-{edges[i + 1] - 1}" for i, e in enumerate(edges)]
    )
    axes.set_xlabel("tokens per sentence")
    axes.set_ylabel("sentences")
    axes.set_title("Sentence length")
    axes.legend()
    return _png(figure)


def _score_columns(df: pd.DataFrame) -> list[str]:
    """Numeric score columns, and ``*score`` columns no pair has a value in (of no numeric type then)."""
    return [
        c for c in df.columns
        if c not in _NOT_DISTRIBUTIONS and (pd.api.types.is_float_dtype(df[c]) or (c.endswith("score") and df[c].isna().all()))
    ]  # fmt: skip


_SAMPLES_PER_BAND = 3


def _score_samples(df: pd.DataFrame, column: str) -> list[tuple[str, str, str, str]]:
    """(band, score, text_a, text_b) of a few pairs at the lowest, the median and the highest ``column``."""
    scored = df.dropna(subset=[column]).sort_values(column, kind="stable")
    middle = max(0, len(scored) // 2 - _SAMPLES_PER_BAND // 2)
    bands = (("lowest", scored.head(_SAMPLES_PER_BAND)), ("median", scored.iloc[middle : middle + _SAMPLES_PER_BAND]),
             ("highest", scored.tail(_SAMPLES_PER_BAND).iloc[::-1]))  # fmt: skip
    return [(band, f"{row[column]:.3f}", row["text_a"], row["text_b"]) for band, rows in bands for _, row in rows.iterrows()]


def _score_histogram(df: pd.DataFrame, column: str) -> str:
    figure, axes = plt.subplots(figsize=(5, 3))
    axes.hist(df[column].dropna(), bins=20, color="#228833")
    axes.set_title(column.replace("_", " "))
    axes.set_ylabel("sentence pairs")
    return _png(figure)


def _label_columns(df: pd.DataFrame, distributions: Iterable[str]) -> list[str]:
    """String columns with a handful of non-empty values (domain or topic labels)."""
    return [
        c
        for c in df.columns
        if c not in _NOT_DISTRIBUTIONS
        and c not in distributions
        and (pd.api.types.is_string_dtype(df[c]) or df[c].dtype == object)
        and df[c].map(lambda v: isinstance(v, str)).all()
        and 1 <= df[c].nunique() <= _MAX_LABELS
        and (df[c] != "").any()
    ]


def _distribution_columns(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Mean probability per label of columns holding a distribution per row (a mapping or (label, p) pairs)."""
    means: dict[str, dict[str, float]] = {}
    for column in df.columns:
        if column in _NOT_DISTRIBUTIONS or df.empty:
            continue
        rows = [_as_mapping(v) for v in df[column]]
        if all(r is not None for r in rows):
            totals: Counter[str] = Counter()
            for row in rows:
                totals.update(row)
            means[column] = {label: round(total / len(rows), 4) for label, total in totals.most_common(_MAX_LABELS)}
    return means


def _as_mapping(value: Any) -> dict[str, float] | None:
    if isinstance(value, str) and value.startswith("{"):  # a distribution stored as a JSON object
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, Mapping):
        items = list(value.items())
    elif hasattr(value, "__iter__") and not isinstance(value, str | bytes):
        items = list(value)
        if not all(isinstance(i, Mapping) and len(i) == 2 for i in items):
            items = [tuple(i) if hasattr(i, "__len__") and len(i) == 2 else None for i in items]
        else:
            items = [tuple(i.values()) for i in items]
    else:
        return None
    try:
        return {str(label): float(p) for label, p in items}
    except (TypeError, ValueError):
        return None


def _stage_counts(stage_counts: list[Mapping[str, Any]]) -> str:
    """Kept and dropped-by-reason as shares of what entered each stage (stages count different items:
    pages, documents, sentences, pairs, so absolute bars would hide the small ones; the table has them)."""
    figure, axes = plt.subplots(figsize=(8, 0.5 * max(len(stage_counts), 3) + 1.5))
    stages = [c["stage"] for c in stage_counts][::-1]
    by_stage = {c["stage"]: c for c in stage_counts}
    totals = [max(by_stage[s]["in"], 1) for s in stages]
    left = [by_stage[s]["kept"] / t for s, t in zip(stages, totals, strict=True)]
    axes.barh(stages, left, color="#4477aa", label="kept")
    colours = plt.get_cmap("tab20")
    for i, reason in enumerate(sorted({r for c in stage_counts for r in c["dropped"]})):
        values = [by_stage[s]["dropped"].get(reason, 0) / t for s, t in zip(stages, totals, strict=True)]
        axes.barh(stages, values, left=left, color=colours(i % 20), label=f"dropped: {reason}")
        left = [a + b for a, b in zip(left, values, strict=True)]
    axes.set_xlabel("share of the items that entered the stage")
    axes.set_title("Counts per stage")
    axes.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _png(figure)


def crawl_efficiency(crawl_log: Iterable[Mapping[str, Any]], paired_urls: set[str]) -> list[tuple[int, int]]:
    """(pages downloaded, pages of a released document pair among them), after each downloaded page."""
    fetched = sorted((e for e in crawl_log if e.get("outcome") == "fetched"), key=lambda e: e.get("time", 0.0))
    curve, found = [], 0
    for downloaded, entry in enumerate(fetched, start=1):
        found += entry["url"] in paired_urls
        curve.append((downloaded, found))
    return curve


def _efficiency_plot(curve: list[tuple[int, int]]) -> str:
    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.plot([d for d, _ in curve], [f for _, f in curve], color="#aa3377")
    axes.set_xlabel("pages downloaded")
    axes.set_ylabel("pages in a released document pair")
    axes.set_title("Crawl efficiency")
    return _png(figure)


def _table(rows: Iterable[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_report(
    pair: str,
    version: int,
    df: pd.DataFrame,
    stats: Mapping[str, Any],
    crawl_log: list[Mapping[str, Any]],
    paired_urls: set[str],
) -> bytes:
    """The report as UTF-8 HTML. ``stats`` is :func:`~bitextflow.release.formats.corpus_stats`'s result
    (with the monolingual and document-pair figures); ``paired_urls`` the URLs of released document pairs."""
    sections: list[str] = []

    def figure(title: str, png: str, note: str = "") -> None:
        note_html = f"<p>{html.escape(note)}</p>" if note else ""
        sections.append(
            f'<h2>{html.escape(title)}</h2>{note_html}<img alt="{html.escape(title)}" src="data:image/png;base64,{png}">'
        )

    summary = [
        ("sentence pairs", stats["sentence_pairs"]),
        ("unique pairs", stats["unique_pairs"]),
        ("document pairs", stats["document_pairs"]),
        *(
            (f"tokens ({stats[s]['languages'] and ','.join(stats[s]['languages'])})", stats[s]["tokens"])
            for s in ("side_a", "side_b")
        ),
        *((f"monolingual sentences ({lang})", n) for lang, n in stats.get("monolingual_sentences", {}).items()),
    ]
    sections.append("<h2>Summary</h2>" + _table(summary, ("figure", "value")))
    figure("Sentence length", _length_histograms(stats, pair))
    for column in _score_columns(df):
        if df[column].notna().any():
            figure(f"Score: {column}", _score_histogram(df, column))
            sections.append(_table(_score_samples(df, column), ("band", column, "text_a", "text_b")))
        else:
            sections.append(
                f"<h2>Score: {html.escape(column)}</h2><p>Not computed for this release: no pair has a "
                f"{html.escape(column)} (the step that gives it did not run for this pair).</p>"
            )

    fetched_per_host = Counter(host(e["url"]) for e in crawl_log if e.get("outcome") == "fetched")
    hosts = stats["side_a"]["top_hosts"]
    if hosts:
        figure(
            "Yield per site", _bar("Sentence pairs per host", {h["host"]: h["sentence_pairs"] for h in hosts}, "sentence pairs")
        )
        sections.append(
            _table(
                ((h["host"], h["sentence_pairs"], fetched_per_host.get(h["host"], 0)) for h in hosts),
                ("host", "sentence pairs", "pages fetched"),
            )
        )
    languages = Counter(e.get("detected_language") or "(unknown)" for e in crawl_log if e.get("outcome") == "fetched")
    if languages:
        figure(
            "Languages of fetched pages", _bar("Pages per detected language", dict(languages.most_common(_MAX_LABELS)), "pages")
        )
    if "domain_terms" in df.columns:
        terms = Counter(t for value in df["domain_terms"] if isinstance(value, str) for t in value.split(";") if t)
        if terms:
            figure(
                "Domain terms",
                _bar("Sentence pairs per matched domain term", dict(terms.most_common(_MAX_LABELS)), "sentence pairs"),
            )
    distributions = _distribution_columns(df)
    for column in _label_columns(df, distributions):
        figure(f"Distribution: {column}", _bar(column, dict(df[column].value_counts().head(_MAX_LABELS)), "sentence pairs"))
    for column, means in distributions.items():
        figure(f"Distribution: {column}", _bar(f"mean {column}", means, "mean probability"))
    if stats["stage_counts"]:
        figure("Counts per stage", _stage_counts(stats["stage_counts"]))
        sections.append(
            _table(
                (
                    (c["stage"], c["in"], c["kept"], ", ".join(f"{r}={n}" for r, n in c["dropped"].items()) or "-")
                    for c in stats["stage_counts"]
                ),
                ("stage", "in", "kept", "dropped by reason"),
            )
        )
    curve = crawl_efficiency(crawl_log, paired_urls)
    if curve:
        figure(
            "Crawl efficiency",
            _efficiency_plot(curve),
            f"{curve[-1][1]} of {curve[-1][0]} downloaded pages belong to a released document pair.",
        )

    title = f"bitextflow release {html.escape(pair)} v{version}"
    style = "body{font-family:sans-serif;max-width:60em;margin:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{style}</style></head>'
        f"<body><h1>{title}</h1>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
    return page.encode("utf-8")
