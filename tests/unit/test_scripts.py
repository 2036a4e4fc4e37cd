"""A language in a script other than its usual one (:mod:`bitextflow.text.scripts`): a page's script, its paragraphs',
its URL's, the release's tags, and the tools that know languages, not scripts."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from bitextflow.align.dictionary import BilingualDictionary, written_otherwise
from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.lid import detect_language
from bitextflow.crawl.urls import Link, language_of_anchor, parse_html, url_languages
from bitextflow.extract import DocumentBuilder
from bitextflow.extract.relevance import TermMatcher
from bitextflow.extract.structure import letters_key
from bitextflow.release.formats import write_tmx
from bitextflow.score import numbers_read
from bitextflow.settings import heliport_executable
from bitextflow.stages.monolingual import by_language
from bitextflow.text.comparison import pair_hash
from bitextflow.text.languages import cld2
from bitextflow.text.lengths import token_count, words
from bitextflow.text.scripts import bcp47, in_its_script
from bitextflow.text.sentences import split_sentences
from tests.support.texts import page_response

SERBIAN_LATIN = (
    "Sistem za upravljanje paketima automatski instalira i ažurira programe na vašem računaru.",
    "Pokrenite naredbu kao administrator i sačekajte da se preuzimanje završi.",
    "Ako nešto pođe po zlu, proverite dnevnik sistema i ponovo pokrenite računar.",
)
SERBIAN_CYRILLIC = (
    "Систем за управљање пакетима аутоматски инсталира и ажурира програме на вашем рачунару.",
    "Покрените наредбу као администратор и сачекајте да се преузимање заврши.",
    "Ако нешто пође по злу, проверите дневник система и поново покрените рачунар.",
)
TRADITIONAL = (
    "這個套件管理系統可以自動安裝與更新您電腦上的軟體，並且處理相依關係。",
    "請以系統管理員的身分執行這個指令，然後等待下載完成。",
    "如果發生錯誤，請檢查系統記錄檔，然後重新啟動電腦。",
)
SIMPLIFIED = (
    "这个软件包管理系统可以自动安装与更新您电脑上的软件，并且处理依赖关系。",
    "请以系统管理员的身份执行这个命令，然后等待下载完成。",
    "如果发生错误，请检查系统日志文件，然后重新启动电脑。",
)
IDENTIFIERS = [
    "cld2",
    pytest.param(
        "heliport",
        marks=pytest.mark.skipif(
            not heliport_executable().is_file(),
            reason="no heliport: `bitextflow-local prepare include/pairs/en-es.yaml` builds it",
        ),
    ),
]


def test_a_text_is_in_another_script_where_its_usual_one_holds_under_a_tenth_of_its_letters() -> None:
    assert in_its_script("sr", " ".join(SERBIAN_LATIN)) == "sr_Latn"
    assert in_its_script("sr", " ".join(SERBIAN_CYRILLIC)) == "sr"
    # a Cyrillic page quoting Latin commands stays Cyrillic
    assert in_its_script("sr", f"{SERBIAN_CYRILLIC[1]} apt-get install --no-install-recommends linux-headers-amd64") == "sr"
    assert in_its_script("uz", "Бу ўзбек тилида ёзилган матн.") == "uz_Cyrl"  # Uzbek's usual script is Latin
    # a script whose letters are the usual one's is never a page's, nor is one CLDR never writes the language in
    assert in_its_script("ja", "ひらがなだけでかかれたぶんしょうです") == "ja"
    assert in_its_script("es", " ".join(SERBIAN_CYRILLIC)) == "es"
    assert in_its_script("zh_Hant", " ".join(SIMPLIFIED)) == "zh_Hant"  # a code with its script keeps it


def test_cld2_names_a_page_with_its_script() -> None:
    assert [cld2(" ".join(text))[0] for text in (TRADITIONAL, SIMPLIFIED, SERBIAN_LATIN, SERBIAN_CYRILLIC)] == [
        "zh_Hant",
        "zh",
        "sr_Latn",
        "sr",
    ]
    # the share of a page's language in another script of it is the page's: CLD2 says so of a few of its characters
    language, _reliable, shares = cld2(" ".join(TRADITIONAL + SIMPLIFIED[:1]))
    assert [code for code, _share in shares if code.startswith("zh")] == [language]


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_a_page_and_its_paragraphs_are_in_the_pages_script(identifier: str) -> None:
    """heliport and fastText name no script (cmn, zh): a paragraph of a Traditional page is Traditional."""
    config = ExtractConfig(language_identifier=identifier)
    for pair, text, language in (
        (("en", "zh_Hant"), TRADITIONAL, "zh_Hant"),
        (("en", "zh"), TRADITIONAL, "zh_Hant"),  # for an en-zh pair, another language
        (("en", "zh"), SIMPLIFIED, "zh"),
        (("en", "sr_Latn"), SERBIAN_LATIN, "sr_Latn"),
    ):
        page = DocumentBuilder(config, languages=pair).build(page_response(text), StageCounts("extract"))
        assert page is not None and page.language == language, (pair, text[0])
        assert {paragraph.language for paragraph in page.paragraphs} == {language}, (pair, text[0])


def test_the_crawlers_page_language_keeps_its_script() -> None:
    assert detect_language(" ".join(TRADITIONAL)) == ("zh_Hant", True)
    assert detect_language(" ".join(SERBIAN_LATIN)) == ("sr_Latn", True)


def test_urls_and_links_name_the_script() -> None:
    assert url_languages("http://example.com/zh-tw/index.html") == {"path": "zh_Hant"}
    assert url_languages("http://example.com/doc/index.zh-hant.html") == {"path": "zh_Hant"}
    assert url_languages("http://example.com/zh_CN/index.html") == {"path": "zh"}
    assert url_languages("http://example.com/sr-latn/index.html") == {"path": "sr_Latn"}
    assert language_of_anchor(Link("http://example.com/tw/", "中文(繁)", "", hreflang="zh-TW")) == "zh_Hant"
    assert language_of_anchor(Link("http://example.com/cn/", "中文(简)", "", hreflang="zh-Hans")) == "zh"
    page = '<html><head><link rel="alternate" hreflang="zh-TW" href="/tw/"><link rel="alternate" hreflang="zh-CN" href="/cn/">'
    parsed = parse_html((page + "</head><body></body></html>").encode(), "http://example.com/en/", "text/html")
    assert parsed is not None and parsed.alternates == {
        "zh_Hant": "http://example.com/tw/",
        "zh": "http://example.com/cn/",
    }


def test_the_tmx_names_a_script_in_bcp47() -> None:
    rows = pd.DataFrame({
        "url_a": ["http://example.com/en/"], "url_b": ["http://example.com/zh-tw/"], "text_a": ["Install the package."],
        "text_b": ["安裝套件。"], "lang_a": ["en"], "lang_b": ["zh_Hant"], "alignment_score": [0.9],
        "domain_relevance": [0.5],
    })  # fmt: skip
    out = io.BytesIO()
    write_tmx(rows, out, "en")
    assert b'xml:lang="zh-Hant"' in out.getvalue() and b"zh_Hant" not in out.getvalue()
    assert bcp47("sr_Latn") == "sr-Latn" and bcp47("es") == "es"


def test_what_knows_languages_not_scripts_is_given_the_language() -> None:
    text = TRADITIONAL[0]
    assert token_count(text, "zh_Hant") == token_count(text, "zh") > len(text.split())
    assert split_sentences("zh_Hant", "".join(TRADITIONAL)) == list(TRADITIONAL)
    assert numbers_read("第三章", "zh_Hant") == numbers_read("第三章", "zh") == ["3"]
    # Snowball's Serbian stemmer reads both scripts: a term's case forms match in a Latin page
    matcher = TermMatcher({"paket": 1.0}, "sr_Latn")
    assert matcher.count("Instalirajte pakete i paketa.") == {"paket": 2}


def test_the_monolingual_stage_counts_a_pair_language_in_another_script_apart() -> None:
    documents = pd.DataFrame({
        "language": ["zh_Hant", "en", "zh", "fr", "zh_Hant"], "url": ["u5", "u1", "u2", "u3", "u4"],
        "doc_id": ["d5", "d1", "d2", "d3", "d4"],
    })  # fmt: skip
    in_pair, others = by_language(documents, ["en", "zh"])
    assert in_pair["doc_id"].tolist() == ["d1", "d2"]
    assert others == {"other_language": ["fr"], "other_script": ["zh_Hant", "zh_Hant"]}


def test_a_dictionary_in_another_script_than_the_pairs_is_not_used() -> None:
    """FreeDict's English-Serbian dictionary is Cyrillic: an en-sr_Latn pair's pages would match none of its entries."""
    cyrillic = BilingualDictionary("en", "sr", (("accept", "прихватити"), ("account", "рачун"), ("able", "способан")), {})
    latin = BilingualDictionary("en", "sr", (("accept", "prihvatiti"), ("account", "račun"), ("able", "sposoban")), {})
    assert written_otherwise(cyrillic, "en", "sr") == [] and written_otherwise(cyrillic, "en", "sr_Latn") == ["sr_Latn"]
    assert written_otherwise(latin, "en", "sr") == ["sr"] and written_otherwise(latin, "en", "sr_Latn") == []
    # letters cannot tell Simplified from Traditional Chinese, whose characters a dictionary partly shares
    simplified = BilingualDictionary("en", "zh", (("package", "软件包"), ("network", "网络")), {})
    assert written_otherwise(simplified, "en", "zh_Hant") == []


def test_a_word_keeps_its_vowel_signs_and_viramas() -> None:
    # combining marks, which Python's re leaves out of \\w: "व्यक्ति" was cut into "व", "यक" and "त"
    assert words("कई व्यक्ति इस्तेमाल करते हैं") == ["कई", "व्यक्ति", "इस्तेमाल", "करते", "हैं"]
    assert words("ไม่มีปัญหา") == ["ไม่มี", "ปัญหา"]
    # the zero-width non-joiner stays between the parts of a Persian word, which dictionaries list apart
    assert words("کتاب‌ها را می‌خوانم") == ["کتاب", "ها", "را", "می", "خوانم"]
    # two texts that differ in a vowel sign alone are not the same text, for near-duplicates or for pair identity
    assert letters_key("कि") != letters_key("की")
    assert pair_hash("He did the work.", "उसने काम किया।") != pair_hash("He did the work.", "उसने काम की।")
    # marks a text may carry or leave out do not make it another text: accents, harakat, emoji's variation selectors
    assert pair_hash("Ça va ?", "Fine.") == pair_hash("ça va", "fine")
    assert pair_hash("He wrote the lesson.", "كَتَبَ الدَّرسَ") == pair_hash("He wrote the lesson.", "كتب الدرس")
    assert pair_hash("I love it ❤️", "Me encanta ❤️") == pair_hash("I love it ❤", "Me encanta ❤")
    assert letters_key("Press 1️⃣ now") == "pressnow"
