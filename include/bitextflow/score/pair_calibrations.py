"""The margin scorer's calibrations of a pair other than en-es, kept in the cache per pair, encoder runtime and recipe.

:func:`bitextflow.score.margin_calibration.fit` makes one (``bitextflow-local prepare`` runs it for a pair config);
the score stage reads them (:func:`cached_calibrations`) and falls back to the shipped en-es ones
(:data:`bitextflow.score.margin.E5_SMALL_CALIBRATIONS`) for a runtime the pair has none for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bitextflow.score.margin import MarginCalibration
from bitextflow.settings import cache_dir

#: Bump when the recipe (sources, negatives, cross-validation) changes, so that cached calibrations are fitted again.
CALIBRATION_VERSION = 1
#: The encoder runtimes a calibration is fitted for (their vectors differ a little).
CALIBRATED_RUNTIMES = ("torch", "onnx-int8")


def calibration_file(pair: str, runtime: str) -> Path:
    """Where ``bitextflow-local prepare`` keeps a pair's calibration for ``runtime``'s vectors."""
    return cache_dir("calibrations") / f"margin-{pair}-{runtime}-v{CALIBRATION_VERSION}.json"


def save(pair: str, runtime: str, result: dict[str, Any]) -> Path:
    """``result`` (of :func:`fit`) as the pair's cached calibration for ``runtime``."""
    path = calibration_file(pair, runtime)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"pair": pair, "runtime": runtime, **result}, indent=1), encoding="utf-8")
    partial.replace(path)
    return path


def cached_calibrations(pair: str) -> dict[str, MarginCalibration]:
    """The pair's calibrations that ``bitextflow-local prepare`` fitted, by runtime (none where it fitted none)."""
    found = {}
    for runtime in CALIBRATED_RUNTIMES:
        path = calibration_file(pair, runtime)
        if path.is_file():
            result = json.loads(path.read_text(encoding="utf-8"))
            found[runtime] = calibration_of(result, pair)
    return found


def calibration_of(result: dict[str, Any], pair: str) -> MarginCalibration:
    """The calibration a fit's ``result`` (of :func:`~bitextflow.score.margin_calibration.calibrate`) holds."""
    return MarginCalibration(**result["calibration"], threshold=result["threshold"], pair=pair)
