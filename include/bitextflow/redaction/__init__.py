"""Publication guards on text: the takedown list and personal data, applied to frames of what a release is made of.

:mod:`~bitextflow.redaction.takedowns` reads and matches a takedown list, :mod:`~bitextflow.redaction.personal_data`
finds personal data and replaces it with typed placeholders, :mod:`~bitextflow.redaction.screen` applies both to
sentence pairs, sentences and document pairs, counting what it sets aside. Where the list is kept and when the guards
run is the stages' and the catalog's business (docs/publishing.md); this package never touches storage.
"""

from __future__ import annotations

from bitextflow.config import PairConfig
from bitextflow.redaction.personal_data import PERSONAL_DATA_TYPES, PersonalDataDetector, phone_regions
from bitextflow.redaction.screen import Screen
from bitextflow.redaction.takedowns import TakedownEntry, TakedownList


def screen_for(config: PairConfig, takedowns: TakedownList) -> Screen:
    """The guards a pair's releases pass: ``takedowns`` and its ``personal_data`` section."""
    settings = config.personal_data
    detector = (
        PersonalDataDetector(
            tuple(kind for kind in PERSONAL_DATA_TYPES if kind in settings.types),
            phone_regions((config.source, config.target), settings.phone_regions),
        )
        if settings.types
        else None
    )
    return Screen(takedowns, detector, settings.action)


__all__ = ["PERSONAL_DATA_TYPES", "PersonalDataDetector", "Screen", "TakedownEntry", "TakedownList", "screen_for"]
