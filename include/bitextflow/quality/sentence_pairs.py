"""The sentence-pair quality gate: one Great Expectations suite run before a corpus is released.

Why Great Expectations: the suite and its results are standard, serialisable objects that the
release stores next to the corpus (``gate.json``) and that Data Docs can render, so a user can see
what was checked, with which thresholds, and what failed. The thresholds come from
:class:`~bitextflow.config.GateConfig`.

Great Expectations costs about 5 s to import, so it is imported inside :func:`check_sentence_pairs`
only: importing this module (e.g. while Airflow parses DAGs) stays cheap.

Expectations, in order:

- the sentence-pair columns are all present (extra columns are allowed: later stages add scores);
- ``url_a``, ``url_b``, ``text_a``, ``text_b``, ``alignment_score``, ``domain_relevance`` and
  ``pair_hash`` have no nulls (a null score would pass the range check silently, a null hash would
  escape the duplicate check);
- ``text_a`` and ``text_b`` contain a non-whitespace character;
- ``alignment_score`` and ``domain_relevance`` lie in [0, 1];
- ``lang_a`` / ``lang_b`` equal the pair's languages;
- the character-length ratio longer/shorter side (helper column ``length_ratio``) is at most
  ``gate.max_length_ratio``;
- the share of rows whose ``pair_hash`` already occurred earlier in the frame (1 - distinct/rows) is
  at most ``gate.max_duplicate_share``. It is checked on the helper column ``repeated_pair_hash``
  (the hash on repeats, null elsewhere) with ``mostly = 1 - share`` rather than with
  ``expect_column_proportion_of_unique_values_to_be_between``, because that one fails an empty
  frame (observed 0) and cannot name the repeated hashes;
- there are at least ``gate.min_sentence_pairs`` rows.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from bitextflow.config import GateConfig
from bitextflow.errors import GateFailed

if TYPE_CHECKING:
    from great_expectations.core.expectation_validation_result import ExpectationValidationResult

SENTENCE_PAIR_COLUMNS: tuple[str, ...] = (
    "url_a", "url_b", "lang_a", "lang_b", "text_a", "text_b", "alignment_score",
    "rule_tags", "domain_relevance", "domain_terms", "pair_hash",
)  # fmt: skip
"""Columns every sentence-pair frame carries (DESIGN.md, section 3)."""

LENGTH_RATIO_COLUMN = "length_ratio"
REPEATED_HASH_COLUMN = "repeated_pair_hash"
_SUITE_NAME = "sentence_pairs"
_EXAMPLES = 3  # offending values quoted per failure: enough to recognise the problem, short enough for a log line


@dataclass
class GateReport:
    """The outcome of a gate run: what a task logs, what :func:`enforce` raises on, what a release stores.

    ``failures`` holds one line per failed expectation, naming it, its column and a few offending
    values; ``result`` is Great Expectations' own validation result as a JSON-able dict.
    """

    success: bool
    failures: list[str]
    evaluated: int
    statistics: dict[str, Any]
    result: dict[str, Any] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "failures": list(self.failures),
            "evaluated": self.evaluated,
            "statistics": dict(self.statistics),
            "result": self.result,
        }


def length_ratio(text_a: pd.Series, text_b: pd.Series) -> pd.Series:
    """Longer side over shorter side in characters, per row.

    The shorter length is floored at 1 so an empty side gives a finite ratio (the emptiness has its
    own expectation); a ratio of infinity would also not survive JSON serialisation of the result.
    """
    len_a = text_a.fillna("").astype(str).str.len()
    len_b = text_b.fillna("").astype(str).str.len()
    longer = pd.concat([len_a, len_b], axis=1).max(axis=1)
    shorter = pd.concat([len_a, len_b], axis=1).min(axis=1).clip(lower=1)
    return (longer / shorter).astype(float)


def _with_helper_columns(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with the helper columns the suite checks.

    A helper whose source column is missing is all-null (which its check ignores): the column-set
    expectation already reports the missing column, once.
    """
    frame = df.copy(deep=False)  # copy-on-write (pandas 3): the caller's frame is left as it was
    if {"text_a", "text_b"} <= set(frame.columns):
        frame[LENGTH_RATIO_COLUMN] = length_ratio(frame["text_a"], frame["text_b"])
    else:
        frame[LENGTH_RATIO_COLUMN] = float("nan")
    if "pair_hash" in frame.columns:
        hashes = frame["pair_hash"]
        frame[REPEATED_HASH_COLUMN] = hashes.where(hashes.notna() & hashes.duplicated(keep="first"))
    else:
        frame[REPEATED_HASH_COLUMN] = None
    return frame


def _build_suite(gx: Any, gate: GateConfig, lang_a: str, lang_b: str) -> Any:
    gxe = gx.expectations
    expectations = [
        gxe.ExpectTableColumnsToMatchSet(column_set=list(SENTENCE_PAIR_COLUMNS), exact_match=False),
        *(
            gxe.ExpectColumnValuesToNotBeNull(column=column)
            for column in ("url_a", "url_b", "text_a", "text_b", "alignment_score", "domain_relevance", "pair_hash")
        ),
        *(gxe.ExpectColumnValuesToMatchRegex(column=column, regex=r"\S") for column in ("text_a", "text_b")),
        *(
            gxe.ExpectColumnValuesToBeBetween(column=column, min_value=0.0, max_value=1.0)
            for column in ("alignment_score", "domain_relevance")
        ),
        gxe.ExpectColumnValuesToBeInSet(column="lang_a", value_set=[lang_a]),
        gxe.ExpectColumnValuesToBeInSet(column="lang_b", value_set=[lang_b]),
        gxe.ExpectColumnValuesToBeBetween(column=LENGTH_RATIO_COLUMN, max_value=float(gate.max_length_ratio)),
        gxe.ExpectColumnValuesToBeNull(column=REPEATED_HASH_COLUMN, mostly=1.0 - float(gate.max_duplicate_share)),
        gxe.ExpectTableRowCountToBeBetween(min_value=int(gate.min_sentence_pairs)),
    ]
    suite = gx.ExpectationSuite(name=_SUITE_NAME)
    for expectation in expectations:
        suite.add_expectation(expectation)
    return suite


def check_sentence_pairs(df: pd.DataFrame, gate: GateConfig, lang_a: str, lang_b: str) -> GateReport:
    """Validate a sentence-pair frame against the suite; never raises on bad data (see :func:`enforce`)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    # Progress bars would flood task logs with one tqdm line per metric batch.
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        context.data_sources.add_pandas("bitextflow")
        .add_dataframe_asset("sentence_pairs")
        .add_batch_definition_whole_dataframe("whole_frame")
    )
    suite = context.suites.add(_build_suite(gx, gate, lang_a, lang_b))
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{_SUITE_NAME}_{lang_a}_{lang_b}", data=batch_definition, suite=suite)
    )
    result = validation.run(batch_parameters={"dataframe": _with_helper_columns(df)}, result_format="SUMMARY")
    failures = [_describe_failure(item) for item in result.results if not item.success]
    statistics = dict(result.statistics)
    return GateReport(
        success=bool(result.success),
        failures=failures,
        evaluated=int(statistics.get("evaluated_expectations", len(result.results))),
        statistics=statistics,
        result=_finite_json(result.to_json_dict()),
    )


def _finite_json(value: Any) -> Any:
    """``value`` with non-finite floats as strings ("inf", "nan").

    Great Expectations' JSON dicts quote offending values as they are, and an infinite score would
    make ``gate.json`` invalid JSON (``Infinity``) for strict parsers.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite_json(item) for item in value]
    return value


def _describe_failure(item: ExpectationValidationResult) -> str:
    """One line: expectation type, its column, then offending values, an observed value or the error."""
    config = item.expectation_config
    kind = config.type if config is not None else "unknown_expectation"
    kwargs = config.kwargs if config is not None else {}
    column = kwargs.get("column")
    name = f"{kind}({column})" if column else kind
    error = _exception_message(item.exception_info or {})
    if error:
        return f"{name}: error: {error.removeprefix('Error: ')}"
    result = item.result or {}
    if kind == "expect_column_values_to_not_be_null":
        return f"{name}: {result.get('unexpected_count', '?')} null values"
    if "partial_unexpected_list" in result:
        examples = ", ".join(list(dict.fromkeys(map(_short, result["partial_unexpected_list"])))[:_EXAMPLES])
        percent = result.get("unexpected_percent")
        share = f" ({percent:.1f}% of rows)" if percent is not None else ""
        allowed = f", allowed {100 * (1 - kwargs['mostly']):.1f}%" if kwargs.get("mostly") is not None else ""
        return f"{name}: {result.get('unexpected_count', '?')} unexpected{share}{allowed}, e.g. {examples}"
    bounds = ", ".join(
        f"{key}={_short(kwargs[key])}" for key in ("min_value", "max_value") if kwargs.get(key) is not None
    )
    missing = result.get("details", {}).get("mismatched", {}).get("missing")
    if missing:  # columns beyond the set are allowed, so only missing ones are the problem
        return f"{name}: missing columns {', '.join(missing)}"
    return f"{name}: observed {_short(result.get('observed_value'))}, expected {bounds}"


def _exception_message(info: dict[str, Any]) -> str | None:
    """The first exception message in ``exception_info``, which comes flat or keyed by metric."""
    if info.get("raised_exception"):
        return str(info.get("exception_message"))
    for value in info.values():
        if isinstance(value, dict) and value.get("raised_exception"):
            return str(value.get("exception_message"))
    return None


def _short(value: Any, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters; repr keeps offending whitespace and newlines visible on one line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def enforce(report: GateReport) -> None:
    """Raise :class:`~bitextflow.errors.GateFailed` (one line, every failed expectation) unless the gate passed."""
    if report.success:
        return
    failed = len(report.failures)
    raise GateFailed(
        f"sentence-pair quality gate failed {failed} of {report.evaluated} expectations: "
        + "; ".join(report.failures)
        + " (fix the data or the pair's gate thresholds)"
    )
