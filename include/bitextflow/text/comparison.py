"""When two texts, or two sentence pairs, count as the same: the identity used for de-duplication."""

from __future__ import annotations

import hashlib
import unicodedata


def normalise_for_comparison(text: str) -> str:
    """Case-folded letters and digits only: two texts equal under this are 'identical'."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


def pair_hash(text_a: str, text_b: str) -> str:
    """Identity of a pair for de-duplication: equal after case folding and dropping non-alphanumerics."""
    joined = f"{normalise_for_comparison(text_a)}\t{normalise_for_comparison(text_b)}"
    return hashlib.sha1(joined.encode("utf-8")).hexdigest()
