"""Registers bitextflow's API server routes (gate Data Docs, release reports, the evaluation page) with Airflow."""

from airflow.plugins_manager import AirflowPlugin

from bitextflow_airflow.data_docs import app
from bitextflow_airflow.evaluation import app as evaluation_app


class BitextflowPlugin(AirflowPlugin):
    name = "bitextflow"
    # the evaluation app first: Starlette matches mounts in order, and /bitextflow would take its paths too
    fastapi_apps = [
        {"app": evaluation_app, "url_prefix": "/bitextflow/evaluation", "name": "bitextflow evaluation"},
        {"app": app, "url_prefix": "/bitextflow", "name": "bitextflow Data Docs"},
    ]
    external_views = [
        {"name": "Evaluate a release", "href": "/bitextflow/evaluation/", "destination": "nav", "category": "browse"}
    ]
