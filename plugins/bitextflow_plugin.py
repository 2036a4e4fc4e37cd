"""Registers bitextflow's API server route (gate Data Docs) with Airflow."""

from airflow.plugins_manager import AirflowPlugin

from bitextflow_airflow.data_docs import app


class BitextflowPlugin(AirflowPlugin):
    name = "bitextflow"
    fastapi_apps = [{"app": app, "url_prefix": "/bitextflow", "name": "bitextflow Data Docs"}]
