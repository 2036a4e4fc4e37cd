"""Gate tasks with a "Data Docs" button: each gate task links to the Data Docs its suites rendered.

The gates themselves live in :mod:`bitextflow.quality` and :func:`bitextflow.stages.gating.judge`; this
module adds the links and the verdict's handling. :class:`GateOperator` is a ``PythonOperator`` with an
operator extra link: Airflow computes the link when the task finishes (failed ones included, which is
when it is wanted most) and the UI shows it on the task instance. It points at the API server's
``/bitextflow/data-docs/`` route (:mod:`bitextflow_airflow.data_docs`), which streams the pages from S3,
so no credential or expiring signature ends up in the link. The release task (:class:`ReleaseOperator`) also
links to the report of what it published (``/bitextflow/reports/``). A failed gate fails the task at once (no
retries: the data will not change; its callable raises through :func:`bitextflow_airflow.failures.failing_at_once`),
while storage errors are retried like in any task.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import BaseOperatorLink

from bitextflow.storage.layout import data_docs_path, release_report_path


class DataDocsLink(BaseOperatorLink):
    name = "Data Docs"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return data_docs_path(operator.bucket, operator.pair, ti_key.run_id, operator.gate)


class ReleaseReportLink(BaseOperatorLink):
    """The report of the release the run published, served by the API server with live links to each gate's Data
    Docs (a run that published nothing gets a 404 page that says so)."""

    name = "Release report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return release_report_path(operator.bucket, operator.pair, ti_key.run_id)


class GateOperator(PythonOperator):
    """A ``PythonOperator`` for a gate: ``bucket``, ``pair`` and ``gate`` (the name given to ``judge``) make its link."""

    operator_extra_links = (DataDocsLink(),)

    def __init__(self, *, bucket: str, pair: str, gate: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bucket, self.pair, self.gate = bucket, pair, gate


class ReleaseOperator(GateOperator):
    """The release task: its gate's Data Docs and the report of what it published."""

    operator_extra_links = (DataDocsLink(), ReleaseReportLink())
