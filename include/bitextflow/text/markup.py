"""Text that goes into markup: XML files and plot labels."""

from __future__ import annotations

import re

_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 cannot carry replaced by U+FFFD."""
    return _XML_ILLEGAL.sub("\ufffd", text)


def plot_label(text: str) -> str:
    """``text`` as matplotlib draws it literally: a ``$`` would start mathtext (``a$b$`` is a formula, and a
    malformed one fails the whole figure)."""
    return text.replace("$", r"\$")
