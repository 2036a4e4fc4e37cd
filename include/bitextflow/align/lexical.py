"""Dictionary + length sentence alignment in the manner of Hunalign.

Varga, D., Németh, L., Halácsy, P., Kornai, A., Trón, V. and Nagy, V. (2005), "Parallel corpora for
medium density languages", Proceedings of RANLP 2005, 590-596. Hunalign scores a candidate bead by
the words its two sides share through a bilingual dictionary (and identical tokens such as numbers
and names) together with the ratio of their lengths, and finds the best-scoring chain of beads by
dynamic programming near the diagonal. Length alone (:mod:`.sentences`, Gale-Church) cannot tell
two sentences of similar length apart; a few translated words can.

Our version keeps the Gale-Church length cost and bead priors for the beads that pair sentences
and subtracts a lexical reward::

    cost(bead) = -ln P(delta | match) - ln P(shape) - DICTIONARY_WEIGHT * sim(bead) * (di + dj) / 2
    cost(1-0) = cost(0-1) = -ln NULL_PRIOR

``sim`` in [0, 1] is the share of the bead's word types that have a translation on the other side:
(target types covered by translations of the source side + source types covered by translations of
the target side) / (all types of both sides). The reward grows with the number of sentences the
bead covers, so a 2-1 bead whose words all match earns as much per sentence as a 1-1 bead.

Null beads cost their prior only. Gale-Church also charges them the probability that a sentence of
that length has an empty translation, 5 to 7 nats for an ordinary sentence, so the search hides an
untranslated sentence inside a 2-1 bead instead, and the lexical reward cannot object: a bead with
an untranslated sentence added earns about what it earned without it (its share of matched types
falls as its size grows). On the Bleualign dev file this one change lifted strict F1 from 0.71 to
0.77 (10% of its gold beads are null).

The search is the same banded dynamic programme as Gale-Church (:func:`.sentences.banded_search`),
so it stays linear in document length; the overlaps it needs are computed only inside the band, a
block of rows at a time, with sparse matrix products.

Words are lower-cased, stripped of accents (so ``o``/``ó``/``ő``/``ô`` meet: FreeDict en-hu spells
ő as ô) and cut to their first :data:`STEM_CHARS` characters, a crude stemmer that lets the lemmas of
the dictionary meet inflected words in text. Tokens with a digit, and tokens of at least
:data:`MIN_IDENTICAL_CHARS` characters, also match themselves (numbers, names, cognates). Without a
dictionary only those identical tokens count, so every language pair aligns.

Bead score, in [0, 1]: ``1 - (1 - P(delta | match)) * (1 - sim)``, high when either the lengths fit
or the words do; for null beads it is the Gale-Church score.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import regex
from numpy.typing import NDArray
from scipy import sparse

from bitextflow.align.blocks import BlockPlan
from bitextflow.align.dictionary import BilingualDictionary
from bitextflow.align.sentences import (
    DEFAULT_MAX_CELLS,
    Bead,
    Bounds,
    LengthModel,
    banded_search,
    beads_from_bounds,
    char_length,
    unaligned_beads,
)
from bitextflow.text.lengths import PLAIN_WORD, WORD_CHARACTER, has_unspaced_script
from bitextflow.text.lengths import words as segmented_words
from bitextflow.text.scripts import base_language

# The four choices below are the setting selected on the six gold files we have (Bleualign de-fr dev
# and test0-3, hunalign's en-hu dtm) by bench/sentence_alignment.py, over weights 3-9, null priors
# 0.01-0.1, stems of 4-6 characters and identical tokens of 3-5: strict F1 on Bleualign test0-3
# 0.853 with it, 0.849 when each file is aligned with the setting selected on the five others.

#: Cost units (nats) a perfectly matching bead earns per sentence it covers.
DICTIONARY_WEIGHT = 6.0
#: Prior of each of the 1-0 and 0-1 beads, their whole cost (Gale-Church's prior is 0.0099).
NULL_PRIOR = 0.03
#: Characters kept of each word (prefix stemming).
STEM_CHARS = 5
#: Identical tokens at least this long count as translations of each other (names, cognates).
MIN_IDENTICAL_CHARS = 4
#: Dictionary lemmas written in kana alone and shorter than this are left out of the word tables. FreeDict's Japanese
#: dictionaries give each kanji word's reading as a headword of its own ("し" translates 78 English stems: child, city,
#: clan, corpse, ...), and in text, where those words are written in kanji, a reading meets only the particles and verb
#: endings that ICU cuts off ("し", "て"), so it matched nearly every sentence. Chosen on the Japanese blocks of both
#: local sites (``bench/dictionaries.py``): the share of 1,500 blocks whose translation the dictionary overlap ranks
#: first, installation guide and Debian Reference, is 0.519 and 0.733 with every reading kept, 0.547 and 0.757 without
#: those of one kana, 0.559 and 0.761 without those of one or two, 0.541 and 0.747 without those of up to three.
MIN_KANA_LEMMA_CHARS = 3
#: Languages whose words go through :func:`unaffixed` before they are cut to their stem.
STEMMED_LANGUAGES = frozenset({"ar"})
#: Arabic writes its article and the particles before it onto the word ("الحزم", the packages), where the dictionary
#: has "حزم". An Arabic word loses the first of these prefixes it starts with, when as many letters as given remain
#: (light10's: Larkey, Ballesteros and Connell (2002), "Improving stemming for Arabic information retrieval", SIGIR),
#: then goes through Snowball's Arabic stemmer. en-ar catalog messages ranked first (``bench/dictionaries.py``): 0.220
#: as written, 0.393 with the prefixes off, 0.413 with the stemmer alone, 0.435 with both.
ARABIC_PREFIXES = (("وال", 2), ("بال", 2), ("كال", 2), ("فال", 2), ("لل", 2), ("ال", 2), ("و", 3))

_ONE_WORD = regex.compile(rf"\W*({WORD_CHARACTER}+)\W*", regex.V1)
_DIGIT = re.compile(r"\d")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_KANA = re.compile(r"[\u3040-\u30ff]+")


@functools.cache
def _combining_marks() -> dict[int, None]:
    """``str.translate`` table deleting every combining character (built once: ~0.2 s)."""
    return {cp: None for cp in range(sys.maxunicode + 1) if unicodedata.combining(chr(cp))}


def _without_marks(match: re.Match[str]) -> str:
    return match.group().translate(_combining_marks())


def fold(text: str) -> str:
    """Lower case without accents: the form in which text and dictionary meet."""
    # translate() with a table costs a dictionary look-up per character; combining marks are never
    # ASCII, so only the runs of other characters go through it (3x faster on dictionary lemmas).
    return _NON_ASCII.sub(_without_marks, unicodedata.normalize("NFKD", text.lower()))


def words(text: str, stem_chars: int = STEM_CHARS, language: str | None = None) -> list[str]:
    """Folded, prefix-stemmed word tokens of a sentence or a lemma in ``language`` (Arabic's through :func:`unaffixed`
    first).

    A run of a script written without spaces (Chinese, Japanese, Thai) is cut at ICU's word boundaries first
    (:func:`bitextflow.text.lengths.words`), on the text as written, since folding strips kana of their voicing marks:
    whole, such a run is one token, a clause whose first characters rarely begin a dictionary lemma."""
    if not has_unspaced_script(text):
        tokens = PLAIN_WORD.findall(fold(text))
    else:
        tokens = [token for token in fold("\n".join(segmented_words(text, PLAIN_WORD))).split("\n") if token]
    if language is not None and base_language(language) in STEMMED_LANGUAGES:
        return [unaffixed(token)[:stem_chars] for token in tokens]
    return [token[:stem_chars] for token in tokens]


def unaffixed(word: str) -> str:
    """A folded Arabic word without its article and particles (:data:`ARABIC_PREFIXES`), through Snowball's stemmer."""
    prefix = next((p for p, rest in ARABIC_PREFIXES if word.startswith(p) and len(word) - len(p) >= rest), "")
    return _arabic_stemmer().stemWord(word[len(prefix) :])


@functools.cache
def _arabic_stemmer() -> Any:
    import Stemmer  # PyStemmer, Snowball's stemmers

    return Stemmer.Stemmer("arabic")


def single_word_stems(
    lemmas: Sequence[str], stem_chars: int = STEM_CHARS, language: str | None = None
) -> tuple[list[str], NDArray[np.int64]]:
    """The distinct stems of the one-word lemmas, and for each lemma its stem's number (-1: more or no words, or a
    kana-only word shorter than :data:`MIN_KANA_LEMMA_CHARS`).

    A lemma's one word is stemmed as :func:`words` would. The lemmas are folded in one call on their
    text joined by newlines: folding goes character by character, and a newline ends a word and a
    normalisation segment, so the result is the same as a call per lemma, without the 400,000 calls
    a side of a large dictionary (FreeDict de-en).
    """
    if not lemmas:
        return [], np.zeros(0, dtype=np.int64)
    numbers: dict[str, int] = {}
    matches = map(_ONE_WORD.fullmatch, fold("\n".join(lemmas)).split("\n"))
    arabic = language is not None and base_language(language) in STEMMED_LANGUAGES
    stem_numbers = [
        numbers.setdefault((unaffixed(word) if arabic else word)[:stem_chars], len(numbers))
        if match and not _short_kana(word := match.group(1))
        else -1
        for match in matches
    ]
    return list(numbers), np.array(stem_numbers, dtype=np.int64)


def _short_kana(word: str) -> bool:
    return len(word) < MIN_KANA_LEMMA_CHARS and _KANA.fullmatch(word) is not None


class WordTranslations:
    """Stemmed single-word dictionary entries in both directions, built once per dictionary.

    Each distinct lemma is stemmed once (:func:`single_word_stems`); the pairs, indices into the
    lemmas (:class:`bitextflow.align.dictionary.LemmaPairs`), become distinct stem pairs in numpy, so
    Python touches each stem pair once, not each of the 1.8 million lemma pairs of FreeDict de-en.
    """

    def __init__(self, dictionary: BilingualDictionary | None, stem_chars: int = STEM_CHARS) -> None:
        self.stem_chars = stem_chars
        #: The languages of the two sides (None without a dictionary), for :func:`words` on their texts.
        self.languages = (dictionary.lang_a, dictionary.lang_b) if dictionary is not None else (None, None)
        self.forward: defaultdict[str, set[str]] = defaultdict(set)
        self.backward: defaultdict[str, set[str]] = defaultdict(set)
        if dictionary is None:
            return
        stems_a, of_lemma_a = single_word_stems(dictionary.pairs.left, stem_chars, dictionary.lang_a)
        stems_b, of_lemma_b = single_word_stems(dictionary.pairs.right, stem_chars, dictionary.lang_b)
        stem_a, stem_b = of_lemma_a[dictionary.pairs.index[:, 0]], of_lemma_b[dictionary.pairs.index[:, 1]]
        both = (stem_a >= 0) & (stem_b >= 0)
        stem_pairs = np.unique(stem_a[both] * len(stems_b) + stem_b[both])
        for a, b in zip(*(part.tolist() for part in np.divmod(stem_pairs, max(len(stems_b), 1))), strict=True):
            self.forward[stems_a[a]].add(stems_b[b])
            self.backward[stems_b[b]].add(stems_a[a])


@functools.lru_cache(maxsize=8)
def word_translations(dictionary: BilingualDictionary | None, stem_chars: int = STEM_CHARS) -> WordTranslations:
    """The :class:`WordTranslations` of a dictionary, built once per dictionary and stem length."""
    return WordTranslations(dictionary, stem_chars)


def matches_itself(token: str, min_chars: int = MIN_IDENTICAL_CHARS) -> bool:
    """Whether a token may stand for itself in the other language (numbers, names, cognates)."""
    return len(token) >= min_chars or _DIGIT.search(token) is not None


def _incidence(rows: Sequence[set[str]], vocabulary: dict[str, int]) -> sparse.csr_matrix:
    """Binary sentence x word-type matrix of ``rows`` over ``vocabulary`` (types outside it ignored)."""
    indices = [[vocabulary[w] for w in row if w in vocabulary] for row in rows]
    data = [1.0] * sum(len(row) for row in indices)
    pointer = np.cumsum([0, *(len(row) for row in indices)])
    flat = [c for row in indices for c in row]
    return sparse.csr_matrix((data, flat, pointer), shape=(len(rows), len(vocabulary)))


def _translated(types: Sequence[set[str]], table: defaultdict[str, set[str]], min_identical_chars: int) -> list[set[str]]:
    """For each sentence, the other language's words its words can translate to (itself included)."""
    of_word: dict[str, set[str]] = {}  # each distinct word looked up once per document
    result = []
    for sentence in types:
        out: set[str] = set()
        for word in sentence:
            translations = of_word.get(word)
            if translations is None:
                translations = of_word[word] = table.get(word, set()) | (
                    {word} if matches_itself(word, min_identical_chars) else set()
                )
            out |= translations
        result.append(out)
    return result


def _merged_spans(matrix: sparse.csr_matrix, max_span: int) -> dict[int, sparse.csr_matrix]:
    """``result[k]`` row ``s`` = the union of rows ``s .. s + k - 1`` (binary), padded with empty rows to keep ``n`` rows."""
    rows = matrix.shape[0]
    result = {1: matrix}
    running = matrix
    for span in range(2, max_span + 1):
        kept = max(rows - span + 1, 0)
        running = running[:kept] + matrix[span - 1 : span - 1 + kept]  # rows s .. s + span - 1, counted
        result[span] = sparse.vstack([running.sign(), sparse.csr_matrix((rows - kept, matrix.shape[1]))], format="csr")
    return result


def _type_counts(matrix: sparse.csr_matrix) -> NDArray[np.float64]:
    result: NDArray[np.float64] = np.asarray(matrix.sum(axis=1), dtype=np.float64).ravel()
    return result


class LexicalMatches:
    """Word-type overlaps of one document pair's beads of up to ``src_span`` x ``tgt_span`` sentences.

    ``shared(di, dj, ...)`` counts, for beads whose source side is sentences ``s .. s + di - 1`` and
    target side ``t .. t + dj - 1``, the target word types of the bead covered by translations of its
    source side plus the source types covered by translations of its target side. Multi-sentence
    sides are unions of their sentences' types, so a function word in both sentences of a 2-2 bead
    counts once, as it would in one 1-1 bead: summing pairwise overlaps instead would reward merging.
    Counts are computed for rectangles of starts with sparse matrix products, so callers ask only for
    the part of the table their search visits.
    """

    def __init__(
        self,
        src_types: Sequence[set[str]],
        tgt_types: Sequence[set[str]],
        translations: WordTranslations,
        src_span: int = 2,
        tgt_span: int = 2,
        min_identical_chars: int = MIN_IDENTICAL_CHARS,
    ) -> None:
        src_vocab = {w: k for k, w in enumerate(sorted(set().union(*src_types)))}
        tgt_vocab = {w: k for k, w in enumerate(sorted(set().union(*tgt_types)))}
        src_words = _incidence(src_types, src_vocab)
        tgt_words = _incidence(tgt_types, tgt_vocab)
        src_to_tgt = _incidence(_translated(src_types, translations.forward, min_identical_chars), tgt_vocab)
        tgt_to_src = _incidence(_translated(tgt_types, translations.backward, min_identical_chars), src_vocab)
        source, forward = _merged_spans(src_words, src_span), _merged_spans(src_to_tgt, src_span)
        target, backward = _merged_spans(tgt_words, tgt_span), _merged_spans(tgt_to_src, tgt_span)
        #: src_count[d][s]: word types of source sentences s .. s + d - 1 together (likewise tgt).
        self.src_count = {d: _type_counts(matrix) for d, matrix in source.items()}
        self.tgt_count = {d: _type_counts(matrix) for d, matrix in target.items()}
        # forward @ target.T + source @ backward.T as one product over both vocabularies side by side.
        self._left = {d: sparse.hstack([forward[d], source[d]], format="csr") for d in source}
        self._right = {d: sparse.hstack([target[d], backward[d]], format="csr").T.tocsr() for d in target}

    @classmethod
    def of_sentences(
        cls,
        src: Sequence[str],
        tgt: Sequence[str],
        dictionary: BilingualDictionary | None,
        span: int = 2,
        stem_chars: int = STEM_CHARS,
        min_identical_chars: int = MIN_IDENTICAL_CHARS,
    ) -> LexicalMatches:
        """The overlaps of two sentence lists' beads of up to ``span`` sentences a side, words cut to ``stem_chars``."""
        translations = word_translations(dictionary, stem_chars)
        src_language, tgt_language = translations.languages
        src_types = [set(words(sentence, stem_chars, src_language)) for sentence in src]
        tgt_types = [set(words(sentence, stem_chars, tgt_language)) for sentence in tgt]
        return cls(src_types, tgt_types, translations, span, span, min_identical_chars)

    def shared(self, di: int, dj: int, s0: int, s1: int, t0: int, t1: int) -> NDArray[np.float64]:
        """Dense ``(s1 - s0, t1 - t0)`` shared-type counts of beads starting at sources ``s0..s1-1``, targets ``t0..t1-1``."""
        result: NDArray[np.float64] = (self._left[di][s0:s1] @ self._right[dj][:, t0:t1]).toarray()
        return result

    def pair_similarity(self, di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        """``sim`` of the beads starting at ``(s[k], t[k])`` for each k (index arrays of equal length)."""
        shared = self._left[di][s].multiply(self._right[dj][:, t].T).sum(axis=1)
        types = self.src_count[di][s] + self.tgt_count[dj][t]
        result: NDArray[np.float64] = np.minimum(np.asarray(shared, dtype=np.float64).ravel() / np.maximum(types, 1.0), 1.0)
        return result

    def similarity(self, di: int, dj: int, s0: int, s1: int, t0: int, t1: int) -> NDArray[np.float64]:
        """``sim`` in [0, 1] (shared types over all types of the bead) of the same rectangle of beads."""
        types = self.src_count[di][s0:s1, None] + self.tgt_count[dj][None, t0:t1]
        result: NDArray[np.float64] = np.minimum(self.shared(di, dj, s0, s1, t0, t1) / np.maximum(types, 1.0), 1.0)
        return result

    def bead_similarity(self, bounds: Sequence[Bounds]) -> NDArray[np.float64]:
        """``sim`` of each bead of a path (0 for null beads), one sparse product per bead shape."""
        edges = np.array(bounds, dtype=np.int64).reshape(-1, 4)
        di, dj = edges[:, 1] - edges[:, 0], edges[:, 3] - edges[:, 2]
        result = np.zeros(len(edges))
        for shape in {(int(a), int(b)) for a, b in zip(di, dj, strict=True) if a and b}:
            rows = np.flatnonzero((di == shape[0]) & (dj == shape[1]))
            result[rows] = self.pair_similarity(*shape, edges[rows, 0], edges[rows, 2])
        return result

    def band_similarity(self, di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        """``sim`` of the beads starting at ``(s[k], t[k])``, cells of a search band (see :data:`.sentences.BeadCost`).

        One sparse product over the rectangle the cells span, then a gather: 30x faster here than
        gathering each cell's rows, and the search asks for a block of rows of a narrow band at a time.
        """
        s0, t0 = int(s.min()), int(t.min())
        result: NDArray[np.float64] = self.similarity(di, dj, s0, int(s.max()) + 1, t0, int(t.max()) + 1)[s - s0, t - t0]
        return result


def align_sentences_lexical(
    src: Sequence[str],
    tgt: Sequence[str],
    dictionary: BilingualDictionary | None,
    max_cells: int = DEFAULT_MAX_CELLS,
    weight: float = DICTIONARY_WEIGHT,
    null_prior: float = NULL_PRIOR,
    stem_chars: int = STEM_CHARS,
    min_identical_chars: int = MIN_IDENTICAL_CHARS,
    plan: BlockPlan | None = None,
) -> list[Bead]:
    """Align two sentence lists with dictionary + length beads (Hunalign-style; see the module).

    ``dictionary`` translates ``src``'s language into ``tgt``'s; with None only identical tokens
    count. Same contract as :func:`.sentences.align_sentences`: beads in document order covering
    every sentence once, the same band (exact up to ``max_cells`` cells, linear beyond). The other
    arguments are the choices the module's constants give by default; ``plan``: the page's blocks
    (:mod:`.blocks`).
    """
    src_len = [char_length(s) for s in src]
    tgt_len = [char_length(s) for s in tgt]
    if not src_len or not tgt_len:
        return unaligned_beads(src_len, tgt_len)
    length = LengthModel(src_len, tgt_len)
    null_cost = -math.log(null_prior)
    matches = LexicalMatches.of_sentences(src, tgt, dictionary, stem_chars=stem_chars, min_identical_chars=min_identical_chars)

    def bead_cost(di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        if di == 0 or dj == 0:
            return np.full(len(s), null_cost)
        return length.bead_cost(di, dj, s, t) - weight * (di + dj) / 2.0 * matches.band_similarity(di, dj, s, t)

    band, cost = length.band(max_cells), bead_cost
    if plan is not None:
        band = plan.band() if plan.corresponding else band
        cost = plan.cost(cost, null_cost)
    bounds = banded_search(*band, cost)
    return beads_from_bounds(bounds, _bead_scores(bounds, length, matches))


def _bead_scores(bounds: Sequence[Bounds], length: LengthModel, matches: LexicalMatches) -> NDArray[np.float64]:
    """Noisy-or of the length probability and the lexical similarity of each bead (the length probability for null beads)."""
    result: NDArray[np.float64] = 1.0 - (1.0 - length.probabilities(bounds)) * (1.0 - matches.bead_similarity(bounds))
    return result
