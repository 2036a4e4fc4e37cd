"""Text utilities shared by every stage: the bottom layer of the package.

- :mod:`~bitextflow.text.languages`: language codes and names (ISO 639 from babel's CLDR data) and CLD2
  language identification;
- :mod:`~bitextflow.text.urls`: language-neutral URL keys (language markers removed), URL text and tokens;
- :mod:`~bitextflow.text.encoding`: bytes to clean text (charset, binary sniffing, mojibake repair, spaces);
- :mod:`~bitextflow.text.comparison`: when two texts or two sentence pairs count as the same (de-duplication).

These modules import nothing from bitextflow but :mod:`bitextflow.errors`, :mod:`bitextflow.settings`,
:mod:`bitextflow.counts` and each other, so crawling, extraction, alignment, scoring and the URL models can
all use them without importing one another.
"""
