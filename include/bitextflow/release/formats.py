"""Release file formats: Bitextor-style TSV, TMX 1.4, JSONL and plain lines, each written a chunk at a time.

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
aligner score ``score-aligner``), and one ``<tuv xml:lang=..>`` per side (BCP 47: ``zh-Hant``) holding
``<prop type="source-document">URL</prop>`` and the ``<seg>``. XML 1.0 has no way to write control
characters other than tab, LF and CR (not even as ``&#x1;``), nor lone surrogates or U+FFFE/U+FFFF,
so each is written as U+FFFD: the file stays well-formed and the damage stays visible.

JSONL (``<pair>.jsonl``): one JSON object per pair holding every column of the sentence-pair frame
(whatever columns the stages added: scores, domain distributions, provenance), null for missing values.

Files carry no creation time, so the same frame always gives the same bytes (a retried task writes
identical objects); the release manifest records when it was published.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import numpy as np
import pandas as pd
from lxml import etree

from bitextflow.errors import StageError
from bitextflow.release.profile import TMX_COLUMNS, require_columns
from bitextflow.text.markup import xml_safe
from bitextflow.text.scripts import bcp47

TSV_COLUMNS: tuple[str, ...] = TMX_COLUMNS[:6]
"""Frame columns written to the TSV, in order (Bitextor's url1, url2, text1, text2, scores)."""

_XML = "{http://www.w3.org/XML/1998/namespace}"
_SURROGATES = re.compile("[\ud800-\udfff]")
_TSV_BREAKS = str.maketrans({c: " " for c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


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
    require_columns(df, TSV_COLUMNS, "TSV")
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


def _tu_elements(df: pd.DataFrame, first_tuid: int) -> Iterator[etree._Element]:
    columns = {c: _texts(df[c]) for c in ("url_a", "url_b", "text_a", "text_b", "lang_a", "lang_b")}
    scores = {c: [_score(v) for v in df[c].tolist()] for c in ("alignment_score", "domain_relevance")}
    for i in range(len(df)):
        tu = etree.Element("tu", tuid=str(first_tuid + i))
        for kind, column in (("score-aligner", "alignment_score"), ("score-domain-relevance", "domain_relevance")):
            if scores[column][i]:  # a missing score gets no prop rather than an empty one
                _prop(tu, kind, scores[column][i])
        for side in ("a", "b"):
            tuv = etree.SubElement(tu, "tuv", {f"{_XML}lang": xml_safe(bcp47(columns[f"lang_{side}"][i]))})
            _prop(tuv, "source-document", columns[f"url_{side}"][i])
            seg = etree.SubElement(tuv, "seg")
            seg.text = xml_safe(columns[f"text_{side}"][i])
        yield tu


class TmxWriter:
    """Stream sentence pairs as TMX 1.4 into ``out``, a chunk at a time (:meth:`write`), one element in memory at a
    time; ``tuid`` runs on across chunks. ``srclang`` is the pair's first language; each tuv's ``xml:lang`` comes
    from the row's ``lang_a``/``lang_b`` so the file states what the data says."""

    def __init__(self, out: IO[bytes], srclang: str):
        self.out, self.srclang, self.units = out, srclang, 0
        self._document = contextlib.ExitStack()  # the file and its <tmx> element
        self._body = contextlib.ExitStack()

    def __enter__(self) -> TmxWriter:
        header = etree.Element(
            "header", creationtool="bitextflow", creationtoolversion=_tool_version(), datatype="plaintext",
            segtype="sentence", adminlang="en", srclang=bcp47(self.srclang), **{"o-tmf": "bitextflow"},
        )  # fmt: skip
        # Written by hand: lxml's declaration uses single quotes, which some TMX readers reject.
        self.out.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
        self._xf = self._document.enter_context(etree.xmlfile(self.out, encoding="utf-8"))
        self._document.enter_context(self._xf.element("tmx", version="1.4"))
        self._xf.write("\n", header, pretty_print=True)
        self._body.enter_context(self._xf.element("body"))
        self._xf.write("\n")
        return self

    def write(self, df: pd.DataFrame) -> None:
        require_columns(df, TMX_COLUMNS, "TMX")
        for tu in _tu_elements(df, self.units + 1):
            self._xf.write(tu, pretty_print=True)
            self.units += 1

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._body.__exit__(kind, error, trace)
        if kind is None:
            self._xf.write("\n")
        self._document.__exit__(kind, error, trace)
        if kind is None:
            self.out.write(b"\n")


def write_tmx(df: pd.DataFrame, out: IO[bytes], srclang: str) -> int:
    """``df`` as a whole TMX 1.4 file (see :class:`TmxWriter`); returns the number of tu."""
    with TmxWriter(out, srclang) as writer:
        writer.write(df)
    return writer.units


TMX_DTD = Path(__file__).with_name("tmx14.dtd")


def validate_tmx(path: str | Path) -> int:
    """Check that ``path`` is well-formed XML and valid against the TMX 1.4 DTD; return its number of tu.

    Streamed: each ``<header>`` and ``<tu>`` is validated against the DTD as it is parsed and then dropped, and
    the document's skeleton (``<tmx>`` with its header and an empty body) last, so memory holds one unit
    whatever the size of the file. The first problem raises :class:`StageError` naming file, line and element.
    """
    path = Path(path)
    dtd = etree.DTD(str(TMX_DTD))
    units = 0
    skeleton = None
    try:
        for event, element in etree.iterparse(str(path), events=("start", "end"), huge_tree=True):
            if event == "start":
                if skeleton is None:
                    skeleton = etree.Element(element.tag, dict(element.attrib))
                continue
            if element.tag == "tu":
                _validate_unit(dtd, element, path)
                units += 1
                element.clear()
                while element.getprevious() is not None:  # cleared units would still add up, one node each
                    del element.getparent()[0]
            elif element.tag == "header":
                _validate_unit(dtd, element, path)
                skeleton.append(etree.fromstring(etree.tostring(element)))  # a copy: the parsed tree is dropped as it goes
            elif element.tag == "body":
                etree.SubElement(skeleton, "body")
    except etree.XMLSyntaxError as exc:
        raise StageError(f"{path}: not well-formed XML ({exc}); the file is damaged, publish the release again") from None
    if skeleton is None or not dtd.validate(skeleton):
        message = dtd.error_log.filter_from_errors()[0].message if skeleton is not None else "no root element"
        raise StageError(f"{path}:1: not valid TMX 1.4 ({message})")
    return units


def _validate_unit(dtd: etree.DTD, element: etree._Element, path: Path) -> None:
    # validated as a document of its own: an element validated in place is given an xmlns:xml the DTD does not declare
    if not dtd.validate(etree.fromstring(etree.tostring(element))):
        error = dtd.error_log.filter_from_errors()[0]
        raise StageError(f"{path}:{element.sourceline}: not valid TMX 1.4 ({error.message})")


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
