"""Sentence splitting in every language: sentencex's rules, and a model for Thai, which marks no sentence's end.

sentencex (Wikimedia's splitter, per-language abbreviation lists and terminators, 。！？ and the Arabic, Devanagari,
Myanmar and Khmer full stops among them) splits at punctuation. Thai writes none at the end of a sentence: a space
between two Thai words marks a pause, a clause or a sentence, so sentencex returns a Thai paragraph whole, and a
paragraph of five sentences became one "sentence" the aligner could only pair whole. Thai is split by PyThaiNLP's
CRFCut, a conditional random field that decides at each space, from the words around it, whether a sentence ends (a
space before "แต่", "but", does not end one, nor a space around a Latin word); its model ships inside the PyThaiNLP
wheel (Apache-2.0): nothing is downloaded.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable

from sentencex import segment

from bitextflow.text.scripts import base_language

#: Languages split by a model of their own instead of sentencex's punctuation rules.
MODEL_SPLIT_LANGUAGES = frozenset({"th"})


@functools.cache
def _thai_splitter() -> Callable[[str], list[str]]:
    # read-only: PyThaiNLP would otherwise make a data folder in the home directory, which a worker may not have
    os.environ.setdefault("PYTHAINLP_READ_ONLY", "1")
    from pythainlp.tokenize import sent_tokenize

    return functools.partial(sent_tokenize, engine="crfcut")


#: A full-width full stop, exclamation or question mark, with the closing quotes and brackets after it, followed by
#: more text. sentencex ends a sentence there only when a CJK character follows: "...表示。3D 形状的..." and
#: "...です。Debian は..." stayed one sentence, though sentences of Chinese and Japanese documentation often begin with
#: a number or a Latin name. Inside a sentence these marks stand only in names ("Yahoo！JAPAN"), which are cut too.
_FULL_WIDTH_END = re.compile(r"[。！？｡]+[」』）】〕〉》〗〙〛］｝｣”’\"')\]»]*")


def _cut_after_full_width_stops(piece: str) -> list[str]:
    cuts = [end.end() for end in _FULL_WIDTH_END.finditer(piece) if piece[end.end() :].strip()]
    return [piece[start:cut] for start, cut in zip([0, *cuts], [*cuts, len(piece)], strict=True)]


def split_sentences(language: str, text: str) -> list[str]:
    """The sentences of ``text`` in ``language`` (a pair or identifier code), in order, stripped, none empty."""
    language = base_language(language)
    pieces = _thai_splitter()(text) if language in MODEL_SPLIT_LANGUAGES else segment(language, text)
    return [sentence.strip() for piece in pieces for sentence in _cut_after_full_width_stops(piece) if sentence.strip()]
