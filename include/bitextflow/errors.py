"""Errors that reach users. Each message names the input at fault and how to fix it, on one line."""


class BitextflowError(Exception):
    """Base class: an error the user can act on (never a bug)."""


class ConfigError(BitextflowError):
    """A pair configuration file is missing, unreadable or invalid."""


class StorageError(BitextflowError):
    """The object store cannot be reached, refuses the credentials, or lacks an object."""


class MissingObjectError(StorageError):
    """The object (or the byte range of it) asked for does not exist: retrying will not make it appear."""


class StageError(BitextflowError):
    """A stage cannot run on the input it was given."""


class GateFailed(BitextflowError):
    """A quality gate found data that violates its expectations."""
