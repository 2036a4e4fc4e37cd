"""A page CLD2 names after another language of a pair language's group (Bosnian, Croatian, Serbian: no identifier tells
them apart) is in the pair's language, in the same script only (bitextflow.extract.language.named_in_pair), at crawl
time and in extraction, and its paragraphs with it."""

from __future__ import annotations

import pytest

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.lid import detect_language
from bitextflow.extract import DocumentBuilder
from bitextflow.extract.language import named_in_pair
from tests.support.texts import page_response

# Croatian as a Bosnian might write it ("računar", "štampač"): CLD2 is sure it is Bosnian
NAMED_BOSNIAN = (
    "Ukoliko vaš računar ne prepoznaje štampač, provjerite da li je kabl ispravno priključen i da li je uređaj uključen.",
    "Kada je baterija skoro prazna, računar će vas upozoriti i preći u stanje mirovanja.",
)


@pytest.mark.parametrize(
    ("found", "pair", "named"),
    [
        # the group's shares add up under the pair's language, so paragraphs are identified among its languages
        (("bs", True, [("bs", 0.7), ("hr", 0.2), ("en", 0.1)]), {"en", "hr"}, ("hr", True, [("hr", 0.9), ("en", 0.1)])),
        (("hr", True, [("hr", 1.0)]), {"en", "sr_Latn"}, ("sr_Latn", True, [("sr_Latn", 1.0)])),
        # Serbian in its usual Cyrillic is no page of a pair in Latin letters, nor Croatian in Latin one in Cyrillic
        (("sr", True, [("sr", 1.0)]), {"en", "hr"}, ("sr", True, [("sr", 1.0)])),
        (("hr", True, [("hr", 1.0)]), {"en", "sr"}, ("hr", True, [("hr", 1.0)])),
        # two of the group in the pair: CLD2's answer stands
        (("bs", False, [("bs", 1.0)]), {"bs", "hr"}, ("bs", False, [("bs", 1.0)])),
        (("es", True, [("es", 1.0)]), {"en", "hr"}, ("es", True, [("es", 1.0)])),
    ],
)
def test_a_language_of_the_group_is_the_pairs_language_of_the_group_in_the_same_script(found, pair, named) -> None:
    language, reliable, shares = named_in_pair(found, frozenset(pair))
    assert (language, reliable) == named[:2]
    assert dict(shares) == pytest.approx(dict(named[2]))


def test_a_croatian_page_cld2_calls_bosnian_is_croatian_for_a_pair_in_croatian() -> None:
    response = page_response(NAMED_BOSNIAN)
    config = ExtractConfig(language_identifier="cld2")
    page = DocumentBuilder(config, languages=("en", "hr")).build(response, StageCounts("extract"))
    assert page is not None and page.language == "hr" and [code for code, _share in page.language_set] == ["hr"]
    assert {paragraph.language for paragraph in page.paragraphs} == {"hr"}
    # without a pair, or for a pair in Bosnian, it is what CLD2 says
    assert DocumentBuilder(config).build(response, StageCounts("extract")).language == "bs"
    assert DocumentBuilder(config, languages=("en", "bs")).build(response, StageCounts("extract")).language == "bs"
    # the crawler's scouting and counterpart promotion see the same language
    assert detect_language(" ".join(NAMED_BOSNIAN), frozenset({"en", "hr"})) == ("hr", True)
    assert detect_language(" ".join(NAMED_BOSNIAN))[0] == "bs"
