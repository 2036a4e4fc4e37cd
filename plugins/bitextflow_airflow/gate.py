"""Gate tasks with a "Data Docs" button: each gate task links to the Data Docs its suites rendered.

The gates themselves live in :mod:`bitextflow.quality` and :func:`bitextflow.stages.gating.judge`; this
module adds the link and the verdict's handling. :class:`GateOperator` is a ``PythonOperator`` with an
operator extra link: Airflow computes the link when the task finishes (failed ones included, which is
when it is wanted most) and the UI shows it on the task instance. It points at the API server's
``/bitextflow/data-docs/`` route (:mod:`bitextflow_airflow.data_docs`), which streams the pages from S3,
so no credential or expiring signature ends up in the link. A failed gate fails the task at once (no
retries: the data will not change), while storage errors are retried like in any task.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import BaseOperatorLink
from airflow.sdk.exceptions import AirflowFailException

from bitextflow.errors import GateFailed
from bitextflow.storage.layout import data_docs_key

DATA_DOCS_ROUTE = "/bitextflow/data-docs"


def data_docs_url(bucket: str, pair: str, run_id: str, gate: str) -> str:
    """The path, on the Airflow API server, of one gate's Data Docs for one run."""
    return f"{DATA_DOCS_ROUTE}/{bucket}/{data_docs_key(pair, run_id, gate)}"


class DataDocsLink(BaseOperatorLink):
    name = "Data Docs"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return data_docs_url(operator.bucket, operator.pair, ti_key.run_id, operator.gate)


class GateOperator(PythonOperator):
    """A ``PythonOperator`` for a gate: ``bucket``, ``pair`` and ``gate`` (the name given to ``judge``) make its link."""

    operator_extra_links = (DataDocsLink(),)

    def __init__(self, *, bucket: str, pair: str, gate: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bucket, self.pair, self.gate = bucket, pair, gate

    def execute_callable(self) -> Any:
        # A failed expectation is not transient: fail without the retries that S3 hiccups deserve.
        try:
            return super().execute_callable()
        except GateFailed as exc:
            raise AirflowFailException(str(exc)) from None
