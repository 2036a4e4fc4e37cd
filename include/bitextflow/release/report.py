"""The HTML report of a release (``report.html``): figures and plots, one self-contained file.

Plots are drawn with matplotlib's Agg backend (no display needed) and embedded as base64 PNG, so the
report can be opened from S3, a laptop or a DVC checkout alike. It shows:

- the verdicts of the run's quality gates, each with a link to its Data Docs on the Airflow API server;
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
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: workers have no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bitextflow.release.fonts import in_pair_fonts  # noqa: E402
from bitextflow.release.profile import MAX_LABELS as _MAX_LABELS  # noqa: E402
from bitextflow.release.profile import CorpusProfile, GateVerdict, host  # noqa: E402
from bitextflow.text.markup import plot_label  # noqa: E402

_PNG_METADATA = {"Software": None}


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


def _score_histogram(values: np.ndarray, column: str) -> str:
    figure, axes = plt.subplots(figsize=(5, 3))
    axes.hist(values[~np.isnan(values)], bins=20, color="#228833")
    axes.set_title(column.replace("_", " "))
    axes.set_ylabel("sentence pairs")
    return _png(figure)


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


def _gates_section(verdicts: Sequence[GateVerdict]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(v.gate)}</td><td>{v.suites - len(v.failed)} of {v.suites} passed</td>"
        f"<td>{html.escape('; '.join(f'{suite}: {failures[0] if failures else chr(8212)}' for suite, failures in v.failed)) or '-'}</td>"
        f'<td><a href="{html.escape(v.data_docs)}">Data Docs</a></td></tr>'
        for v in verdicts
    )
    return (
        "<h2>Quality gates</h2><p>Each gate judged every site partition, then the run; the Data Docs links open on the "
        "Airflow API server (this report's <em>Release report</em> button on the release task).</p>"
        f"<table><tr><th>gate</th><th>suites</th><th>failed</th><th>details</th></tr>{rows}</table>"
    )


@dataclass(frozen=True)
class CrawlProfile:
    """What the report shows of the crawl log: pages fetched per host and per detected language, and whether each
    fetched page, in download order, belongs to a released document pair (a byte a page)."""

    fetched_per_host: Counter[str]
    languages: Counter[str]
    paired_in_order: np.ndarray

    def curve(self) -> np.ndarray:
        """Pages of a released document pair found after each downloaded page (García-Romero et al.)."""
        return np.cumsum(self.paired_in_order)


def crawl_profile(crawl_log: Iterable[Mapping[str, Any]], paired_urls: set[str]) -> CrawlProfile:
    """One pass over the crawl log (``paired_urls``: the URLs of released document pairs)."""
    hosts: Counter[str] = Counter()
    languages: Counter[str] = Counter()
    times, paired = [], []
    for entry in crawl_log:
        if entry.get("outcome") != "fetched":
            continue
        hosts[host(entry["url"])] += 1
        languages[entry.get("detected_language") or "(unknown)"] += 1
        times.append(float(entry.get("time", 0.0)))
        paired.append(entry["url"] in paired_urls)
    order = np.argsort(np.array(times, dtype=float), kind="stable")
    return CrawlProfile(hosts, languages, np.array(paired, dtype=np.int64)[order])


def _efficiency_plot(curve: np.ndarray) -> str:
    figure, axes = plt.subplots(figsize=(6, 3.5))
    # at most ~2,000 points: a million-page crawl draws the same line
    step = max(1, len(curve) // 2000)
    downloaded = np.r_[np.arange(1, len(curve) + 1)[::step], len(curve)]
    axes.plot(downloaded, curve[downloaded - 1], color="#aa3377")
    axes.set_xlabel("pages downloaded")
    axes.set_ylabel("pages in a released document pair")
    axes.set_title("Crawl efficiency")
    return _png(figure)


def _table(rows: Iterable[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    # dir="auto": a cell of Arabic or Hebrew text reads right to left
    body = "".join("<tr>" + "".join(f'<td dir="auto">{html.escape(str(v))}</td>' for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _documents_section(
    figures: Mapping[str, Mapping[str, Any]], samples: Mapping[str, Mapping[str, Sequence[Mapping[str, str]]]]
) -> str:
    """The monolingual documents: documents and words per language, their quality labels, samples per label."""
    parts = [
        "<h2>Monolingual documents</h2><p>Released documents per language (<code>documents.&lt;lang&gt;.jsonl.gz</code>), "
        "with their text-quality labels (PT publishable running text, RTE running text with errors, PRT partially running "
        "text, NRT not running text, WLN wrong or no language).</p>",
        _table(
            (
                (lang, f["documents"], f["words"], ", ".join(f"{label}={n}" for label, n in f["quality_labels"].items()) or "-")
                for lang, f in figures.items()
            ),
            ("language", "documents", "words", "quality labels"),
        ),  # fmt: skip
    ]
    labels = {f"{lang} {label}": n for lang, f in figures.items() for label, n in f["quality_labels"].items()}
    scores = {
        f"{lang} {tenth / 10:.1f}-{(tenth + 1) / 10:.1f}": n
        for lang, f in figures.items()
        for tenth, n in enumerate(f.get("quality_scores", []))
    }
    domains = {f"{lang} {label}": n for lang, f in figures.items() for label, n in f.get("domains", {}).items()}
    for title, counts in (
        ("Documents per language and quality label", labels),
        ("Documents per language and quality score", scores),
        ("Documents per language and most probable domain", domains),
    ):
        if any(counts.values()):
            parts.append(f'<img alt="{title}" src="data:image/png;base64,{_bar(title, counts, "documents")}">')
    rows = [
        (lang, label, sample["url"], sample["text"])
        for lang, bands in samples.items()
        for label, band in sorted(bands.items())
        for sample in band
    ]
    if rows:
        parts.append("<h3>Sample documents per quality label</h3>" + _table(rows, ("language", "label", "url", "text (start)")))
    return "".join(parts)


def _interval_text(figures: Mapping[str, Any]) -> str:
    if figures["precision"] is None:
        return "not judged yet"
    return f"{figures['precision']:.3f} [{figures['low']:.3f}, {figures['high']:.3f}]"


def _evaluation_section(evaluation: Mapping[str, Any]) -> str:
    """What people's labels of an earlier release measured: precision with its interval, per band and site, and the
    curve of precision and kept pairs against the score threshold (docs/evaluation.md)."""
    overall = evaluation["overall"]
    agreement = evaluation["agreement"]
    parts = [
        f"<h2>Manual evaluation (v{evaluation['version']})</h2><p>{overall['judged']} pairs judged good or bad by "
        f"{html.escape(', '.join(evaluation['annotators']))} in a sample of {evaluation['size']} (seed {evaluation['seed']}, "
        f"stratified by {html.escape(evaluation['score_column'])} band and site) of release v{evaluation['version']}, "
        f"labelled {html.escape(evaluation['labelled_from'][:10])} to {html.escape(evaluation['labelled_until'][:10])}; "
        f"{overall['unsure']} not sure. Precision with its 95% interval ({html.escape(evaluation['method'])})"
        + ("" if agreement is None else f"; labellers agree on {agreement:.0%} of {evaluation['shared_items']} shared pairs")
        + ".</p>",
        _table(
            (
                (name, _interval_text(figures), figures["good"], figures["bad"])
                for name, figures in (("all pairs", overall), *evaluation["per_band"].items(), *evaluation["per_site"].items())
            ),
            ("pairs", "precision [95% interval]", "good", "bad"),
        ),
    ]
    curve = [point for point in evaluation["curve"] if point["precision"] is not None]
    if len(curve) > 1:
        figure, precision_axes = plt.subplots(figsize=(6, 3))
        thresholds = [point["threshold"] for point in curve]
        precision_axes.plot(thresholds, [point["precision"] for point in curve], color="#228833", label="precision")
        precision_axes.fill_between(
            thresholds, [point["low"] for point in curve], [point["high"] for point in curve], color="#228833", alpha=0.2
        )
        precision_axes.set_xlabel(f"{evaluation['score_column']} threshold")
        precision_axes.set_ylabel("estimated precision")
        kept_axes = precision_axes.twinx()
        kept_axes.plot(thresholds, [point["kept_pairs"] for point in curve], color="#4477aa", label="kept pairs")
        kept_axes.set_ylabel("kept pairs")
        precision_axes.set_title("Precision and kept pairs against the threshold")
        parts.append(f'<img alt="Precision and kept pairs against the threshold" src="data:image/png;base64,{_png(figure)}">')
    return "".join(parts)


@in_pair_fonts
def render_report(
    pair: str,
    version: int,
    profile: CorpusProfile,
    stats: Mapping[str, Any],
    samples: Mapping[str, list[tuple[str, str, str, str]]],
    crawl: CrawlProfile,
    gates: Sequence[GateVerdict] = (),
    documents: Mapping[str, Mapping[str, Sequence[Mapping[str, str]]]] | None = None,
) -> bytes:
    """The report as UTF-8 HTML. ``stats`` is the release's ``stats.json`` (with the monolingual and document-pair
    figures); ``samples`` the pairs shown per score band (:meth:`CorpusProfile.take_samples`); ``gates`` the
    verdicts of the run's quality gates; ``documents`` sample released documents per language and quality label
    (:attr:`~bitextflow.release.documents.DocumentsCorpus.samples`). The plots draw the pair's scripts in their fonts
    (:func:`~bitextflow.release.fonts.in_pair_fonts`)."""
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
        *((f"monolingual documents ({lang})", figures["documents"]) for lang, figures in stats.get("documents", {}).items()),
    ]
    sections.append("<h2>Summary</h2>" + _table(summary, ("figure", "value")))
    if gates:
        sections.append(_gates_section(gates))
    figure("Sentence length", _length_histograms(stats, pair))
    for column in profile.scores:
        values = profile.score_values(column)
        if column in samples:
            figure(f"Score: {column}", _score_histogram(values, column))
            sections.append(_table(samples[column], ("band", column, "text_a", "text_b")))
        else:
            sections.append(
                f"<h2>Score: {html.escape(column)}</h2><p>Not computed for this release: no pair has a "
                f"{html.escape(column)} (the step that gives it did not run for this pair).</p>"
            )

    hosts = stats["side_a"]["top_hosts"]
    if hosts:
        figure(
            "Yield per site", _bar("Sentence pairs per host", {h["host"]: h["sentence_pairs"] for h in hosts}, "sentence pairs")
        )
        sections.append(
            _table(
                ((h["host"], h["sentence_pairs"], crawl.fetched_per_host.get(h["host"], 0)) for h in hosts),
                ("host", "sentence pairs", "pages fetched"),
            )
        )
    if crawl.languages:
        figure(
            "Languages of fetched pages",
            _bar("Pages per detected language", dict(crawl.languages.most_common(_MAX_LABELS)), "pages"),
        )
    if profile.domain_terms:
        figure(
            "Domain terms",
            _bar("Sentence pairs per matched domain term", dict(profile.domain_terms.most_common(_MAX_LABELS)), "sentence pairs"),
        )
    for column, counts in profile.label_counts().items():
        figure(f"Distribution: {column}", _bar(column, dict(counts.most_common(_MAX_LABELS)), "sentence pairs"))
    for column, means in profile.distribution_means().items():
        figure(f"Distribution: {column}", _bar(f"mean {column}", means, "mean probability"))
    if stats.get("documents"):
        sections.append(_documents_section(stats["documents"], documents or {}))
    if stats.get("manual_evaluation"):
        sections.append(_evaluation_section(stats["manual_evaluation"]))
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
    curve = crawl.curve()
    if len(curve):
        figure(
            "Crawl efficiency",
            _efficiency_plot(curve),
            f"{int(curve[-1])} of {len(curve)} downloaded pages belong to a released document pair.",
        )

    title = f"bitextflow release {html.escape(pair)} v{version}"
    style = "body{font-family:sans-serif;max-width:60em;margin:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{style}</style></head>'
        f"<body><h1>{title}</h1>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
    return page.encode("utf-8")
