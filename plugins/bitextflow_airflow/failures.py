"""Errors that no retry can mend fail their task at once.

Tasks retry three times with growing waits (:func:`bitextflow_airflow.pair_dag.build_pair_dag`), which rides out a
storage or network outage. A configuration error (an override of a deployment-only option, an invalid value) or a
failed quality gate gives the same answer on every try: retrying only delays the failure by minutes and hides it
behind "up for retry". Airflow's :class:`AirflowFailException` fails a task without its retries.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from airflow.sdk.exceptions import AirflowFailException

from bitextflow.errors import ConfigError, GateFailed

#: The errors of the core that name bad input or bad data: the same on every try.
FINAL_ERRORS = (ConfigError, GateFailed)

Function = TypeVar("Function", bound=Callable[..., Any])


def failing_at_once(function: Function) -> Function:
    """``function`` (a task's callable), with :data:`FINAL_ERRORS` raised as :class:`AirflowFailException` (same
    message) so that the task fails without retries."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except FINAL_ERRORS as exc:
            raise AirflowFailException(str(exc)) from None

    return run  # type: ignore[return-value] - same signature, by functools.wraps
