"""Release file formats: Bitextor-style TSV, TMX 1.4, and corpus statistics.

TSV (``<pair>.tsv``), UTF-8, no header, one sentence pair per line, in Bitextor's column order
(URLs, texts, then scores) so tools that read Bitextor output read ours::

    1 url1              URL of the document text1 comes from (language lang_a)
    2 url2              URL of the document text2 comes from (language lang_b)
    3 text1             sentence in lang_a
    4 text2             sentence in lang_b
    5 alignment_score   sentence-alignment score, 0..1, four decimals
    6 domain_relevance  domain relevance of the pair, 0..1, four decimals

Tabs and line breaks inside a field (``\\t``, ``\\n``, ``\\r`` and the other characters Python's
``str.splitlines`` breaks on) become a space, since either would shift columns or split a record.

TMX 1.4 (``<pair>.tmx``): one ``<tu>`` per pair with ``tuid`` (1-based row number), tu-level
``<prop type="score-aligner">`` and ``<prop type="score-domain-relevance">`` (Bitextor names its
aligner score ``score-aligner``), and one ``<tuv xml:lang=..>`` per side holding
``<prop type="source-document">URL</prop>`` and the ``<seg>``. XML 1.0 has no way to write control
characters other than tab, LF and CR (not even as ``&#x1;``), nor lone surrogates or U+FFFE/U+FFFF,
so each is written as U+FFFD: the file stays well-formed and the damage stays visible.

JSONL (``<pair>.jsonl``): one JSON object per pair holding every column of the sentence-pair frame
(whatever columns the stages added: scores, domain distributions, provenance), null for missing values.

Files carry no creation time, so the same frame always gives the same bytes (a retried task writes
identical objects); the release manifest records when it was published.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
from lxml import etree

from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.text.markup import xml_safe

TSV_COLUMNS: tuple[str, ...] = ("url_a", "url_b", "text_a", "text_b", "alignment_score", "domain_relevance")
"""Frame columns written to the TSV, in order (Bitextor's url1, url2, text1, text2, scores)."""

TMX_COLUMNS: tuple[str, ...] = (*TSV_COLUMNS, "lang_a", "lang_b")

TOKEN_BIN_EDGES: tuple[int, ...] = (0, 5, 10, 20, 30, 50, 80, 120)
"""Left edges of token-length bins (last bin open-ended); fixed so versions compare bin by bin."""

CHARACTER_BIN_EDGES: tuple[int, ...] = (0, 25, 50, 100, 200, 400, 800)
"""Left edges of character-length bins (last bin open-ended)."""

TOP_HOSTS = 20

_XML = "{http://www.w3.org/XML/1998/namespace}"
_SURROGATES = re.compile("[\ud800-\udfff]")
_TSV_BREAKS = str.maketrans({c: " " for c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def _require(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise StageError(f"cannot write {what}: sentence-pair frame lacks column(s) {', '.join(missing)}")


def _texts(series: pd.Series) -> list[str]:
    """Column values as strings, null as "" (the gate rejects nulls; writers must not crash on them).

    Lone surrogates (only an object column can hold them, e.g. text decoded with surrogateescape)
    become U+FFFD: UTF-8 cannot encode them, in TSV or TMX.
    """
    return [
        "" if v is None or (isinstance(v, float) and math.isnan(v)) else _SURROGATES.sub("\ufffd", str(v))
        for v in series.tolist()
    ]


def _score(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value):.4f}"


def _tsv_field(text: str) -> str:
    return text.translate(_TSV_BREAKS)


def write_tsv(df: pd.DataFrame, out: IO[bytes]) -> int:
    """Write ``df`` as header-less Bitextor-style TSV (columns in the module docstring); return rows."""
    _require(df, TSV_COLUMNS, "TSV")
    columns = [_texts(df[c]) for c in TSV_COLUMNS[:4]]
    scores = [[_score(v) for v in df[c].tolist()] for c in TSV_COLUMNS[4:]]
    rows = 0
    for url1, url2, text1, text2, alignment, relevance in zip(*columns, *scores, strict=True):
        fields = (url1, url2, text1, text2, alignment, relevance)
        out.write(("\t".join(_tsv_field(f) for f in fields) + "\n").encode("utf-8"))
        rows += 1
    return rows


def _tool_version() -> str:
    """bitextflow's installed version, for the TMX header (TMX 1.4 requires creationtoolversion)."""
    try:
        return metadata.version("bitextflow")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def _prop(parent: etree._Element, kind: str, value: str) -> None:
    prop = etree.SubElement(parent, "prop", type=kind)
    prop.text = xml_safe(value)


def _tu_elements(df: pd.DataFrame) -> Iterator[etree._Element]:
    columns = {c: _texts(df[c]) for c in ("url_a", "url_b", "text_a", "text_b", "lang_a", "lang_b")}
    scores = {c: [_score(v) for v in df[c].tolist()] for c in ("alignment_score", "domain_relevance")}
    for i in range(len(df)):
        tu = etree.Element("tu", tuid=str(i + 1))
        for kind, column in (("score-aligner", "alignment_score"), ("score-domain-relevance", "domain_relevance")):
            if scores[column][i]:  # a missing score gets no prop rather than an empty one
                _prop(tu, kind, scores[column][i])
        for side in ("a", "b"):
            tuv = etree.SubElement(tu, "tuv", {f"{_XML}lang": xml_safe(columns[f"lang_{side}"][i])})
            _prop(tuv, "source-document", columns[f"url_{side}"][i])
            seg = etree.SubElement(tuv, "seg")
            seg.text = xml_safe(columns[f"text_{side}"][i])
        yield tu


def write_tmx(df: pd.DataFrame, out: IO[bytes], srclang: str) -> int:
    """Stream ``df`` as TMX 1.4 to ``out`` (one element in memory at a time); return the number of tu.

    ``srclang`` is the pair's first language; each tuv's ``xml:lang`` comes from the row's
    ``lang_a``/``lang_b`` so the file states what the data says.
    """
    _require(df, TMX_COLUMNS, "TMX")
    header = etree.Element(
        "header",
        creationtool="bitextflow",
        creationtoolversion=_tool_version(),
        datatype="plaintext",
        segtype="sentence",
        adminlang="en",
        srclang=srclang,
        **{"o-tmf": "bitextflow"},
    )
    rows = 0
    # Written by hand: lxml's declaration uses single quotes, which some TMX readers reject.
    out.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    with etree.xmlfile(out, encoding="utf-8") as xf, xf.element("tmx", version="1.4"):
        xf.write("\n", header, pretty_print=True)
        with xf.element("body"):
            xf.write("\n")
            for tu in _tu_elements(df):
                xf.write(tu, pretty_print=True)
                rows += 1
        xf.write("\n")
    out.write(b"\n")
    return rows


TMX_DTD = Path(__file__).with_name("tmx14.dtd")


def validate_tmx(path: str | Path) -> int:
    """Check that ``path`` is well-formed XML and valid against the TMX 1.4 DTD; return its number of tu.

    Parsed incrementally (one ``<tu>`` in memory at a time) for well-formedness, then validated with
    lxml's DTD validator; the first problem raises :class:`StageError` naming file, line and element.
    """
    path = Path(path)
    units = 0
    try:
        for _event, element in etree.iterparse(str(path), tag="tu", huge_tree=True):
            units += 1
            element.clear()
    except etree.XMLSyntaxError as exc:
        raise StageError(f"{path}: not well-formed XML ({exc}); the file is damaged, publish the release again") from None
    dtd = etree.DTD(str(TMX_DTD))
    if not dtd.validate(etree.parse(str(path), etree.XMLParser(huge_tree=True))):
        error = dtd.error_log.filter_from_errors()[0]
        raise StageError(f"{path}:{error.line}: not valid TMX 1.4 ({error.message})")
    return units


def _json_value(value: Any) -> Any:
    """A frame cell as JSON: numpy scalars and arrays as Python values, NaN and NA as null."""
    if isinstance(value, np.ndarray):
        return [_json_value(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    return value


def write_jsonl(df: pd.DataFrame, out: IO[bytes]) -> int:
    """Write every row of ``df`` as one JSON object per line, all columns in frame order; return rows."""
    columns = list(df.columns)
    rows = 0
    for values in df.itertuples(index=False, name=None):
        record = {column: _json_value(value) for column, value in zip(columns, values, strict=True)}
        out.write(json.dumps(record, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n")
        rows += 1
    return rows


def write_lines(texts: Iterable[str], out: IO[bytes]) -> int:
    """One text per line (line breaks inside a text become spaces, as in the TSV); return lines."""
    lines = 0
    for text in texts:
        out.write((_tsv_field(_SURROGATES.sub("\ufffd", text)) + "\n").encode("utf-8"))
        lines += 1
    return lines


def _histogram(values: pd.Series, edges: tuple[int, ...]) -> dict[str, list[int]]:
    bins = np.searchsorted(np.asarray(edges), values.to_numpy(), side="right") - 1
    counts = np.bincount(bins[bins >= 0], minlength=len(edges))
    return {"edges": list(edges), "counts": [int(c) for c in counts]}


_QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9, "max": 1.0}


def _summary(values: pd.Series) -> dict[str, float | int | None]:
    """Count, mean and quantiles of a score column, rounded to 4 decimals; None when it is empty
    (JSON has no NaN)."""
    clean = pd.to_numeric(values, errors="coerce").dropna()
    if clean.empty:
        return {"count": 0, "mean": None, **dict.fromkeys(_QUANTILES)}
    quantiles = clean.quantile(list(_QUANTILES.values())).round(4).tolist()
    return {
        "count": int(clean.size),
        "mean": round(float(clean.mean()), 4),
        **dict(zip(_QUANTILES, quantiles, strict=True)),
    }


def host(url: str) -> str:
    """The host of ``url``, ``(none)`` when it has none."""
    return urlsplit(url).hostname or "(none)"


def _side_stats(df: pd.DataFrame, side: str) -> dict[str, Any]:
    texts = pd.Series(_texts(df[f"text_{side}"]), dtype=object)
    urls = _texts(df[f"url_{side}"])
    # Whitespace tokens: language-neutral and reproducible, though scripts without spaces (zh, ja)
    # count a sentence as one token; characters are given next to them for that reason.
    tokens = texts.map(lambda t: len(t.split())).astype(int)
    characters = texts.map(len).astype(int)
    languages = sorted(set(_texts(df[f"lang_{side}"])))
    return {
        "languages": languages,
        "documents": len(set(urls)),
        "tokens": int(tokens.sum()),
        "characters": int(characters.sum()),
        "top_hosts": [{"host": h, "sentence_pairs": n} for h, n in Counter(map(host, urls)).most_common(TOP_HOSTS)],
        "token_length_histogram": _histogram(tokens, TOKEN_BIN_EDGES),
        "character_length_histogram": _histogram(characters, CHARACTER_BIN_EDGES),
    }


def corpus_stats(df: pd.DataFrame, stage_counts: Iterable[StageCounts]) -> dict[str, Any]:
    """The statistics a release publishes (``stats.json``): sizes, per-side figures, score summaries,
    and the per-stage counts that explain how many items each stage kept and why it dropped others."""
    _require(df, (*TMX_COLUMNS, "pair_hash"), "statistics")
    return {
        "sentence_pairs": len(df),
        "unique_pairs": int(df["pair_hash"].nunique()),
        "document_pairs": int(df[["url_a", "url_b"]].drop_duplicates().shape[0]),
        "side_a": _side_stats(df, "a"),
        "side_b": _side_stats(df, "b"),
        "alignment_score": _summary(df["alignment_score"]),
        "domain_relevance": _summary(df["domain_relevance"]),
        "stage_counts": [counts.to_dict() for counts in stage_counts],
    }
