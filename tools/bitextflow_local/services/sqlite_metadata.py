"""How the local stack's Airflow components connect to their SQLite metadata database.

SQLite in WAL mode (Airflow sets it) lets one writer in at a time. A connection that must wait for the write lock
waits up to ``timeout`` seconds, but only when its transaction has read nothing yet: one that has read and then
writes (a read snapshot older than the lock) fails at once with "database is locked", whatever the timeout. Airflow
opens such transactions with SAVEPOINT (``Session.begin_nested``: a backfill's runs, a run's task instances) and
reads before it writes, so under load, when another component commits between the read and the write, `airflow
backfill create` failed. :class:`WriteLockingConnection` starts a transaction that a SAVEPOINT would open with
``BEGIN IMMEDIATE``, which takes the write lock first and so waits its turn instead. Statements outside a savepoint
keep Python's sqlite3 behaviour: reads run on their own and a transaction begins at the first write, before it has
read anything.
"""

from __future__ import annotations

import sqlite3
from typing import Any


class WriteLockingCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if not self.connection.in_transaction and sql.lstrip()[:9].upper() == "SAVEPOINT":
            super().execute("BEGIN IMMEDIATE")
        return super().execute(sql, parameters)


class WriteLockingConnection(sqlite3.Connection):
    """A sqlite3 connection whose savepoints outside a transaction begin one holding the write lock."""

    def cursor(self, factory: Any = WriteLockingCursor) -> sqlite3.Cursor:  # type: ignore[override]
        return super().cursor(factory)


#: Airflow's ``[database] sql_alchemy_connect_args`` (an import path) for the stack's SQLite database: wait up to a
#: minute for the write lock rather than sqlite3's default 5 s, and take it before a savepoint's first read
SQLITE_CONNECT_ARGS: dict[str, Any] = {"timeout": 60, "factory": WriteLockingConnection}
