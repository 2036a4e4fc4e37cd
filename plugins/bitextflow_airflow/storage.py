"""Object-store settings for tasks: an Airflow connection when one is defined, else the environment.

Define the connection ``bitextflow_s3`` (type aws; login = access key id, password = secret key,
extra ``{"endpoint_url": "http://127.0.0.1:8333"}``) to point every pair at another store; set
``BITEXTFLOW_S3_CONN_ID`` to use a connection of another name.
"""

from __future__ import annotations

import os
from typing import Any

from airflow.sdk import Connection
from airflow.sdk.exceptions import AirflowNotFoundException

from bitextflow.storage import ObjectStore, StorageSettings


def _conn_id() -> str:
    return os.environ.get("BITEXTFLOW_S3_CONN_ID", "bitextflow_s3")


def _from_connection(connection: Any, bucket: str) -> ObjectStore:
    extra = connection.extra_dejson
    settings = StorageSettings(
        endpoint_url=extra.get("endpoint_url") or connection.host or None,
        access_key_id=connection.login,
        secret_access_key=connection.password,
        region=extra.get("region_name", "us-east-1"),
    )
    return ObjectStore(settings, bucket)


def object_store(bucket: str) -> ObjectStore:
    """The store as a running task sees it (the task SDK resolves the connection)."""
    try:
        return _from_connection(Connection.get(_conn_id()), bucket)
    except AirflowNotFoundException:
        return ObjectStore.from_env(bucket)


def server_object_store(bucket: str) -> ObjectStore:
    """The store as the API server sees it: it reads connections from the metadata database, not the task SDK."""
    from airflow.models.connection import Connection as StoredConnection

    try:
        return _from_connection(StoredConnection.get_connection_from_secrets(_conn_id()), bucket)
    except AirflowNotFoundException:
        return ObjectStore.from_env(bucket)
