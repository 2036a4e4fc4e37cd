"""The margin scorer's coverage rule (bitextflow.score.margin_coverage): a pair whose multi-sentence side holds a
sentence the other side lacks is caught, a translator's split or merge is not."""

from __future__ import annotations

import numpy as np

from bitextflow.score.margin_coverage import MIN_COVERAGE, coverage, sentence_cosines, trimmed, uncovered
from tests.support.alignment_fakes import word_vector


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def topical(word: str, share: float = 0.7) -> np.ndarray:
    """A sentence vector with a component shared by every sentence of the text (sentence encoders give sentences of one
    topic cosines around 0.7-0.8): cosine ``share`` between any two of them."""
    topic, own = unit(word_vector("topic", 64)), unit(word_vector(word, 64))
    own = unit(own - (own @ topic) * topic)
    return np.sqrt(share) * topic + np.sqrt(1.0 - share) * own


def test_an_extra_sentence_is_uncovered_and_a_split_is_covered() -> None:
    first, second, extra = (topical(word) for word in ("first", "second", "extra"))
    merged = unit(first + second)  # one target sentence translating both source sentences
    assert coverage(np.stack([first, second]), merged[None]) >= MIN_COVERAGE
    # "... volume group. This is" against "Esto es": the first source sentence has no counterpart
    assert coverage(np.stack([extra, second]), second[None]) < MIN_COVERAGE
    assert coverage(first[None], second[None]) == 1.0  # 1-1 beads are the margin's business, not this rule's
    assert uncovered([(np.stack([extra, second]), second[None]), (first[None], first[None])]) == [True, False]


def test_both_multi_sentence_sides_are_checked() -> None:
    a, b, c = (unit(word_vector(word, 32)) for word in "abc")
    whole, parts = sentence_cosines(np.stack([a, b]), np.stack([a, c]))
    assert len(parts) == 4 and -1.0 <= whole <= 1.0


def test_a_sentence_of_the_same_topic_that_the_other_side_lacks_is_cut_a_merge_is_kept() -> None:
    first, second, see_also = (topical(word, share=0.9) for word in ("first", "second", "see-also"))
    # "Access NIS ... by the nis package. See The Linux NIS HOWTO." against the first sentence's translation: covered
    # (a sentence of the same topic), but the first sentence alone is closer to the other side
    assert coverage(np.stack([first, see_also]), first[None]) >= MIN_COVERAGE
    assert trimmed(np.stack([first, see_also]), first[None]) == (0, 0)
    assert trimmed(first[None], np.stack([see_also, first])) == (1, 1)
    # a target sentence translating both source sentences: each adds to the match
    assert trimmed(np.stack([first, second]), unit(first + second)[None]) is None
    assert trimmed(first[None], first[None]) is None
    assert trimmed(np.stack([first, second]), np.stack([first, second])) is None


def test_a_side_too_long_for_the_other_is_cut_to_its_closest_sentence_where_that_one_fits() -> None:
    first, added = (topical(word, share=0.9) for word in ("first", "added"))
    # the translator's added sentence on the topic: the whole side is as close as the first sentence alone, so the
    # vectors alone keep both. The first is a little closer than the added one, as a translation is: with the two tied
    # the closest would be whichever rounding favours, and an Intel Xeon's numpy favours the second.
    merge = unit(first + 0.9 * added)[None]
    assert trimmed(merge, np.stack([first, added])) is None
    # 68 characters against 103 + 68: over a ratio of 2.5 whole, 1.5 for the first sentence alone
    assert trimmed(merge, np.stack([first, added]), ([68.0], [103.0, 68.0]), 2.5) == (1, 0)
    # lengths that fit, or a closest sentence that would not fit either: left to the vectors (and the length rule)
    assert trimmed(merge, np.stack([first, added]), ([68.0], [60.0, 50.0]), 2.5) is None
    assert trimmed(merge, np.stack([first, added]), ([20.0], [103.0, 68.0]), 2.5) is None
    # the same with the several sentences on the source side
    assert trimmed(np.stack([first, added]), merge, ([103.0, 68.0], [68.0]), 2.5) == (0, 0)
