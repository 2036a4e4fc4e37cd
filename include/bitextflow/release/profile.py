"""What a release says about its pairs, gathered a chunk at a time: the statistics of ``stats.json`` and what the
report draws, without holding the pairs.

A release streams its pairs (one site partition after another) into its files; :class:`CorpusProfile` sees each
chunk once and keeps figures whose size does not grow with the texts: counters, histograms, 8-byte identities of
the distinct pairs, documents and document pairs, and one float per pair and score column (the quantiles and
histograms need every value). The pairs the report shows per score band are picked from those values
(:meth:`CorpusProfile.sample_positions`) and read on a second pass (:meth:`CorpusProfile.take_samples`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.hashing import SeenHashes
from bitextflow.text.lengths import token_count

TOKEN_BIN_EDGES: tuple[int, ...] = (0, 5, 10, 20, 30, 50, 80, 120)
"""Left edges of token-length bins (last bin open-ended); fixed so versions compare bin by bin."""

CHARACTER_BIN_EDGES: tuple[int, ...] = (0, 25, 50, 100, 200, 400, 800)
"""Left edges of character-length bins (last bin open-ended)."""

TOP_HOSTS = 20
MAX_LABELS = 20
SAMPLES_PER_BAND = 3
TMX_COLUMNS: tuple[str, ...] = ("url_a", "url_b", "text_a", "text_b", "alignment_score", "domain_relevance", "lang_a", "lang_b")
# Columns that identify or carry text; never drawn as a distribution.
NOT_DISTRIBUTIONS = frozenset(
    {"url_a", "url_b", "text_a", "text_b", "lang_a", "lang_b", "pair_hash", "rule_tags", "domain_terms"}
)
_QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9, "max": 1.0}


@dataclass(frozen=True)
class GateVerdict:
    """One quality gate of the run, as the report shows it: its suites, those that failed with their failures, and
    where its Data Docs are served (a path on the Airflow API server)."""

    gate: str
    suites: int
    failed: tuple[tuple[str, tuple[str, ...]], ...]
    data_docs: str


def require_columns(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise StageError(f"cannot write {what}: sentence-pair frame lacks column(s) {', '.join(missing)}")


def host(url: str) -> str:
    """The host of ``url``, ``(none)`` when it has none."""
    return urlsplit(url).hostname or "(none)"


def identity(*texts: str) -> int:
    """A 64-bit identity of ``texts`` (for counting distinct values without keeping them)."""
    return int.from_bytes(hashlib.blake2b("\t".join(texts).encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def as_text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


class _Side:
    """One side's figures: languages, distinct documents, tokens, characters, hosts, length histograms."""

    def __init__(self) -> None:
        self.languages: set[str] = set()
        self.documents = SeenHashes()
        self.tokens = self.characters = 0
        self.hosts: Counter[str] = Counter()
        self.token_bins = np.zeros(len(TOKEN_BIN_EDGES), dtype=np.int64)
        self.character_bins = np.zeros(len(CHARACTER_BIN_EDGES), dtype=np.int64)

    def add(self, texts: list[str], urls: list[str], languages: list[str]) -> None:
        # Words: whitespace tokens, and ICU's word boundaries for scripts without spaces (zh, ja, th), where a
        # whole sentence would be one whitespace token
        tokens = np.array([token_count(t, language) for t, language in zip(texts, languages, strict=True)], dtype=np.int64)
        characters = np.array([len(t) for t in texts], dtype=np.int64)
        self.tokens += int(tokens.sum())
        self.characters += int(characters.sum())
        self.token_bins += _bin_counts(tokens, TOKEN_BIN_EDGES)
        self.character_bins += _bin_counts(characters, CHARACTER_BIN_EDGES)
        self.languages.update(languages)
        self.documents.add(identity(url) for url in urls)
        self.hosts.update(map(host, urls))

    def stats(self) -> dict[str, Any]:
        return {
            "languages": sorted(self.languages),
            "documents": len(self.documents),
            "tokens": self.tokens,
            "characters": self.characters,
            "top_hosts": [{"host": h, "sentence_pairs": n} for h, n in self.hosts.most_common(TOP_HOSTS)],
            "token_length_histogram": {"edges": list(TOKEN_BIN_EDGES), "counts": self.token_bins.tolist()},
            "character_length_histogram": {"edges": list(CHARACTER_BIN_EDGES), "counts": self.character_bins.tolist()},
        }


def _bin_counts(values: np.ndarray, edges: tuple[int, ...]) -> np.ndarray:
    bins = np.searchsorted(np.asarray(edges), values, side="right") - 1
    return np.bincount(bins[bins >= 0], minlength=len(edges))


def score_summary(values: np.ndarray) -> dict[str, float | int | None]:
    """Count, mean and quantiles of a score column, rounded to 4 decimals; None when it is empty (JSON has no NaN)."""
    clean = pd.Series(values, dtype=float).dropna()
    if clean.empty:
        return {"count": 0, "mean": None, **dict.fromkeys(_QUANTILES)}
    quantiles = clean.quantile(list(_QUANTILES.values())).round(4).tolist()
    return {"count": int(clean.size), "mean": round(float(clean.mean()), 4), **dict(zip(_QUANTILES, quantiles, strict=True))}


def as_distribution(value: Any) -> dict[str, float] | None:
    """A cell holding a distribution (a mapping, a JSON object, or (label, p) pairs) as label -> probability."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, Mapping):
        items = list(value.items())
    elif hasattr(value, "__iter__") and not isinstance(value, str | bytes):
        items = list(value)
        if all(isinstance(i, Mapping) and len(i) == 2 for i in items):
            items = [tuple(i.values()) for i in items]
        else:
            items = [tuple(i) if hasattr(i, "__len__") and len(i) == 2 else None for i in items]
    else:
        return None
    try:
        return {str(label): float(p) for label, p in items}
    except (TypeError, ValueError):
        return None


class CorpusProfile:
    """Every figure of a release, gathered chunk by chunk with :meth:`add`; :meth:`stats` is ``stats.json``."""

    def __init__(self) -> None:
        self.sentence_pairs = 0
        self.pairs = SeenHashes()
        self.sides = {"a": _Side(), "b": _Side()}
        self.columns: list[str] = []
        self.scores: dict[str, list[np.ndarray]] = {}
        self.domain_terms: Counter[str] = Counter()
        self.document_pair_yield: Counter[int] = Counter()
        # string columns that may be labels (few distinct values): their counts, until one disqualifies
        self.labels: dict[str, Counter[str]] | None = None
        # columns whose every cell is a distribution: their sums per label, until one is not
        self.distributions: dict[str, Counter[str]] | None = None

    def add(self, df: pd.DataFrame) -> None:
        require_columns(df, (*TMX_COLUMNS, "pair_hash"), "statistics")
        if not self.columns:
            self.columns = list(df.columns)
            self.scores = {c: [] for c in dict.fromkeys(["alignment_score", "domain_relevance", *self._score_columns(df)])}
            self.labels = {c: Counter() for c in df.columns if c not in NOT_DISTRIBUTIONS and c not in self.scores}
            self.distributions = {c: Counter() for c in df.columns if c not in NOT_DISTRIBUTIONS}
        self.sentence_pairs += len(df)
        self.pairs.add(identity(as_text(h)) for h in df["pair_hash"].tolist())
        urls = {side: [as_text(u) for u in df[f"url_{side}"].tolist()] for side in "ab"}
        for url_a, url_b in zip(urls["a"], urls["b"], strict=True):
            self.document_pair_yield[identity(url_a, url_b)] += 1
        for side, figures in self.sides.items():
            figures.add(
                [as_text(t) for t in df[f"text_{side}"].tolist()], urls[side], [as_text(v) for v in df[f"lang_{side}"].tolist()]
            )
        for column, parts in self.scores.items():
            parts.append(pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan))
        if "domain_terms" in df.columns:
            self.domain_terms.update(t for value in df["domain_terms"] if isinstance(value, str) for t in value.split(";") if t)
        self._add_labels(df)
        self._add_distributions(df)

    def _score_columns(self, df: pd.DataFrame) -> list[str]:
        """Numeric score columns, and ``*score`` columns no pair has a value in (of no numeric type then)."""
        return [
            c for c in df.columns
            if c not in NOT_DISTRIBUTIONS and (pd.api.types.is_float_dtype(df[c]) or (c.endswith("score") and df[c].isna().all()))
        ]  # fmt: skip

    def _add_labels(self, df: pd.DataFrame) -> None:
        for column in list(self.labels or {}):
            values = df[column].tolist()
            counts = self.labels[column]
            if not all(isinstance(v, str) for v in values):
                del self.labels[column]
                continue
            counts.update(values)
            if len(counts) > MAX_LABELS:
                del self.labels[column]

    def _add_distributions(self, df: pd.DataFrame) -> None:
        for column in list(self.distributions or {}):
            rows = [as_distribution(v) for v in df[column].tolist()]
            if not all(row is not None for row in rows):
                del self.distributions[column]
                continue
            for row in rows:
                self.distributions[column].update(row)

    def score_values(self, column: str) -> np.ndarray:
        parts = self.scores.get(column, [])
        return np.concatenate(parts) if parts else np.zeros(0)

    def label_counts(self) -> dict[str, Counter[str]]:
        """String columns with 1 to ``MAX_LABELS`` values, not all empty (domain or topic labels)."""
        distributions = self.distribution_means()
        return {
            column: counts for column, counts in (self.labels or {}).items()
            if column not in distributions and 1 <= len(counts) <= MAX_LABELS and any(label != "" for label in counts)
        }  # fmt: skip

    def distribution_means(self) -> dict[str, dict[str, float]]:
        """Mean probability per label of the columns holding a distribution in every row."""
        if not self.sentence_pairs:
            return {}
        return {
            column: {label: round(total / self.sentence_pairs, 4) for label, total in totals.most_common(MAX_LABELS)}
            for column, totals in (self.distributions or {}).items()
        }

    def yield_of(self, url_a: str, url_b: str) -> int:
        """Sentence pairs released from one document pair."""
        return self.document_pair_yield.get(identity(url_a, url_b), 0)

    def sample_positions(self) -> dict[str, list[tuple[str, int]]]:
        """Per score column with values: (band, position in the release) of a few pairs at the lowest, the median
        and the highest value (ties in release order)."""
        picked: dict[str, list[tuple[str, int]]] = {}
        for column in self.scores:
            values = self.score_values(column)
            scored = np.flatnonzero(~np.isnan(values))
            if not len(scored):
                continue
            ranked = scored[np.argsort(values[scored], kind="stable")]
            middle = max(0, len(ranked) // 2 - SAMPLES_PER_BAND // 2)
            bands = (("lowest", ranked[:SAMPLES_PER_BAND]), ("median", ranked[middle : middle + SAMPLES_PER_BAND]),
                     ("highest", ranked[-SAMPLES_PER_BAND:][::-1]))  # fmt: skip
            picked[column] = [(band, int(position)) for band, positions in bands for position in positions]
        return picked

    def take_samples(self, chunks: Iterable[pd.DataFrame]) -> dict[str, list[tuple[str, str, str, str]]]:
        """(band, score, text_a, text_b) of the pairs :meth:`sample_positions` picked, read from ``chunks`` (the
        release's pairs again, in order)."""
        picked = self.sample_positions()
        wanted = {position for rows in picked.values() for _band, position in rows}
        texts: dict[int, tuple[str, str]] = {}
        start = 0
        for chunk in chunks:
            for position in sorted(p for p in wanted if start <= p < start + len(chunk)):
                row = chunk.iloc[position - start]
                texts[position] = (as_text(row["text_a"]), as_text(row["text_b"]))
            start += len(chunk)
        return {
            column: [(band, f"{self.score_values(column)[position]:.3f}", *texts[position]) for band, position in rows]
            for column, rows in picked.items()
        }

    def stats(self, stage_counts: Iterable[StageCounts]) -> dict[str, Any]:
        """``stats.json``: sizes, per-side figures, score summaries, and the per-stage counts that explain how many
        items each stage kept and why it dropped others."""
        return {
            "sentence_pairs": self.sentence_pairs,
            "unique_pairs": len(self.pairs),
            "document_pairs": len(self.document_pair_yield),
            "side_a": self.sides["a"].stats(),
            "side_b": self.sides["b"].stats(),
            "alignment_score": score_summary(self.score_values("alignment_score")),
            "domain_relevance": score_summary(self.score_values("domain_relevance")),
            "stage_counts": [counts.to_dict() for counts in stage_counts],
        }
