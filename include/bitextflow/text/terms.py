"""Domain terms in text: counts of a pair's weighted terms and the relevance score built on them.

relevance(side) = 1 - exp(-sum(count(term) * weight) / tokens * 10): a saturating score in [0, 1)
that grows with the weighted density of domain terms, so long sentences are not favoured merely for
length. A pair's relevance is the larger of its two sides'. The crawler weighs links and pages by the
same term counts.
"""

from __future__ import annotations

import math

from bitextflow.text.lengths import words

# Scale so that one term of weight 1 in a 10-token sentence gives about 0.63.
_DENSITY_SCALE = 10.0


def term_matches(text: str, terms: dict[str, float]) -> dict[str, int]:
    """Count of each (possibly multi-word) term, matched on whole lower-cased words (:func:`.lengths.words`: in
    Chinese, Japanese or Thai text, ICU's words, so a term is found inside a run of characters without spaces)."""
    return _matches(words(text), terms)


def _matches(tokens: list[str], terms: dict[str, float]) -> dict[str, int]:
    joined = f" {' '.join(token.lower() for token in tokens)} "
    return {term: n for term in terms if (n := joined.count(f" {' '.join(words(term))} ")) > 0}


def relevance(text: str, terms: dict[str, float]) -> tuple[float, list[str]]:
    """Relevance in [0, 1) and the matched terms, most weighted first."""
    tokens = words(text)  # once: the density's denominator and the matches
    if not tokens or not terms:
        return 0.0, []
    matches = _matches(tokens, terms)
    weighted = sum(count * terms[term] for term, count in matches.items())
    score = 1.0 - math.exp(-_DENSITY_SCALE * weighted / len(tokens))
    return score, sorted(matches, key=lambda term: (-terms[term], term))
