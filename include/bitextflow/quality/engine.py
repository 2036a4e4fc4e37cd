"""Running one Great Expectations suite over a pandas frame, and turning its result into a one-line verdict.

Every gate of the pipeline (documents, sentences, document pairs, sentence pairs) goes through
:func:`validate`: the suites differ only in their expectations and helper columns. Why Great
Expectations: the suite and its result are standard, serialisable objects; the gate stores the result
next to the data it judged and renders it as Data Docs (static HTML) that a user opens from the
Airflow UI to see what was checked, with which thresholds, and what failed.

Great Expectations costs about 5 s to import, so it is imported inside :func:`validate` only:
importing this module (e.g. while Airflow parses DAGs) stays cheap.
"""

from __future__ import annotations

import math
import os
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from bitextflow.errors import GateFailed

if TYPE_CHECKING:
    from great_expectations.core.expectation_validation_result import ExpectationValidationResult

ExpectationsBuilder = Callable[[Any], list[Any]]
"""Given ``great_expectations.expectations``, the suite's expectations (so GX is imported only when a gate runs)."""

_EXAMPLES = 3  # offending values quoted per failure: enough to recognise the problem, short enough for a log line
_DATA_DOCS_SITE = "bitextflow"
# Data Docs name a validation page by its run time; a fixed one keeps a rerun's keys (and bytes) the same.
_FIXED_RUN_TIME = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class GateReport:
    """The outcome of a gate run: what a task logs, what :func:`enforce` raises on, what a release stores.

    ``failures`` holds one line per failed expectation, naming it, its column and a few offending
    values; ``result`` is Great Expectations' own validation result as a JSON-able dict.
    """

    suite: str
    success: bool
    failures: list[str]
    evaluated: int
    statistics: dict[str, Any]
    result: dict[str, Any] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "success": self.success,
            "failures": list(self.failures),
            "evaluated": self.evaluated,
            "statistics": dict(self.statistics),
            "result": self.result,
        }


@dataclass(frozen=True)
class Check:
    """One suite to run: its name, the frame (helper columns included) and its expectations."""

    suite: str
    frame: pd.DataFrame = field(repr=False)
    expectations: ExpectationsBuilder = field(repr=False)


def validate(checks: Iterable[Check], *, data_docs_dir: Path | None = None, run_name: str = "bitextflow") -> list[GateReport]:
    """Run each check; never raises on bad data (see :func:`enforce`). One report per check, in order. ``checks`` may
    be a generator that reads each frame when its turn comes, so that a gate over many partitions holds one at a time.

    With ``data_docs_dir``, the suites and their results are also rendered there as one Data Docs site
    (``index.html`` listing every validation, one page per suite and per validation), ready to upload
    next to the data.
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    # Progress bars would flood task logs with one tqdm line per metric batch.
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    actions = []
    if data_docs_dir is not None:
        context.add_data_docs_site(
            _DATA_DOCS_SITE,
            {
                "class_name": "SiteBuilder",
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(data_docs_dir)},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            },
        )
        actions.append(gx.checkpoint.UpdateDataDocsAction(name="data_docs", site_names=[_DATA_DOCS_SITE]))
    source = context.data_sources.add_pandas("bitextflow")
    reports = []
    for check in checks:
        batch_definition = source.add_dataframe_asset(check.suite).add_batch_definition_whole_dataframe("whole")
        suite = gx.ExpectationSuite(name=check.suite)
        for expectation in check.expectations(gx.expectations):
            suite.add_expectation(expectation)
        suite = context.suites.add(suite)
        validation = context.validation_definitions.add(
            gx.ValidationDefinition(name=check.suite, data=batch_definition, suite=suite)
        )
        checkpoint = context.checkpoints.add(
            gx.Checkpoint(name=check.suite, validation_definitions=[validation], actions=actions, result_format="SUMMARY")
        )
        run = checkpoint.run(
            batch_parameters={"dataframe": check.frame}, run_id=RunIdentifier(run_name=run_name, run_time=_FIXED_RUN_TIME)
        )
        result = next(iter(run.run_results.values()))
        statistics = dict(result.statistics)
        reports.append(
            GateReport(
                suite=check.suite,
                success=bool(result.success),
                failures=[_describe_failure(item) for item in result.results if not item.success],
                evaluated=int(statistics.get("evaluated_expectations", len(result.results))),
                statistics=statistics,
                result=_stable_json(_finite_json(result.to_json_dict())),
            )
        )
        # The datasource's execution engine caches every batch it loaded, frame included, for the context's life: a
        # gate over many partitions would hold each partition's frame to the end (measured: +10 MB a suite of 10 MB).
        batches = source.get_execution_engine().batch_manager
        batches.reset_batch_cache()
        batches.batch_data_cache.clear()
    if data_docs_dir is not None:
        _stabilise_site(data_docs_dir)
    return reports


def enforce(report: GateReport) -> None:
    """Raise :class:`~bitextflow.errors.GateFailed` (one line, every failed expectation) unless the gate passed."""
    if report.success:
        return
    raise GateFailed(
        f"{report.suite.replace('_', '-')} quality gate failed {len(report.failures)} of {report.evaluated} expectations: "
        + "; ".join(report.failures)
        + " (fix the data or the pair's gate thresholds)"
    )


# Identifiers and clock readings that Great Expectations draws anew on every run; see _stable_json.
_VOLATILE_KEYS = frozenset({"id", "validation_id", "checkpoint_id", "ge_load_time"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_GX_TIMESTAMP = re.compile(r"\d{8}T\d{6}\.\d{6}Z")
_GX_REMOTE_LOGO = re.compile(r"https://great-expectations-web-assets\.s3\.[a-z0-9-]+\.amazonaws\.com/([\w.-]+)\?d=[\w.]+")


def _stable_json(value: Any) -> Any:
    """``value`` without the random ids and load times GX adds, so a rerun of a gate stores the same bytes."""
    if isinstance(value, dict):
        return {key: _stable_json(item) for key, item in value.items() if key not in _VOLATILE_KEYS}
    if isinstance(value, list):
        return [_stable_json(item) for item in value]
    return value


def _stabilise_site(root: Path) -> None:
    """Make the rendered pages the same on every rerun.

    GX puts random UUIDs (collapsible sections) and its load time into the pages, and loads its logo
    from its web server with a time-stamped URL; the UUIDs become deterministic ones (numbered per
    page), the load time the fixed run time, and the logo the copy shipped in the site's ``static/``.
    (The pages still load Bootstrap and jQuery from public CDNs, as GX renders them.)
    """
    fixed = _FIXED_RUN_TIME.strftime("%Y%m%dT%H%M%S.%fZ")
    for page in sorted(root.rglob("*.html")):
        name = page.relative_to(root).as_posix()
        to_root = "../" * name.count("/")
        numbered: dict[str, str] = {}

        def stable_uuid(match: re.Match[str], page_name: str = name, ids: dict[str, str] = numbered) -> str:
            return ids.setdefault(match[0], str(uuid.uuid5(uuid.NAMESPACE_URL, f"{page_name}#{len(ids)}")))

        text = _UUID.sub(stable_uuid, page.read_text(encoding="utf-8"))
        text = _GX_TIMESTAMP.sub(fixed, text)
        text = _GX_REMOTE_LOGO.sub(lambda m, up=to_root: f"{up}static/images/{m[1]}", text)
        page.write_text(text, encoding="utf-8")


def _finite_json(value: Any) -> Any:
    """``value`` with non-finite floats as strings ("inf", "nan").

    Great Expectations' JSON dicts quote offending values as they are, and an infinite score would
    make the stored result invalid JSON (``Infinity``) for strict parsers.
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
        expected = f" (expected {_bounds(kwargs)})" if kind == "expect_column_values_to_be_between" else ""
        return f"{name}: {result.get('unexpected_count', '?')} unexpected{share}{allowed}, e.g. {examples}{expected}"
    missing = result.get("details", {}).get("mismatched", {}).get("missing")
    if missing:  # columns beyond the set are allowed, so only missing ones are the problem
        return f"{name}: missing columns {', '.join(missing)}"
    return f"{name}: observed {_short(result.get('observed_value'))}, expected {_bounds(kwargs)}"


def _bounds(kwargs: dict[str, Any]) -> str:
    return ", ".join(
        f"{key}={_short(kwargs[key])}" for key in ("min_value", "max_value", "value_set") if kwargs.get(key) is not None
    )


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
