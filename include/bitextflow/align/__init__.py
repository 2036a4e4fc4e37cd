"""Alignment stage: which documents translate each other, then which of their sentences do.

Documents are paired first (:mod:`.documents`, by language-neutral URLs), then the sentences of each
document pair are aligned (:mod:`.sentences`, Gale-Church by length; :mod:`.lexical`, Hunalign-style
dictionary + length, with bilingual dictionaries built from Debian packages by :mod:`.dictionary`;
:mod:`.embedding`, Vecalign-style, by sentence embeddings).
:mod:`.evaluation` scores sentence alignments against gold beads for tests and benchmarks.
"""

from bitextflow.align.documents import align_by_url
from bitextflow.align.sentences import Bead, align_sentences, sentence_pairs

__all__ = [
    "Bead",
    "align_by_url",
    "align_sentences",
    "sentence_pairs",
]
