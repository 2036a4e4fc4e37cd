"""Hard rules and term relevance: the walking-skeleton scorers."""

import pytest

from bitextflow.config import ScoreConfig
from bitextflow.extract.relevance import TermMatcher
from bitextflow.score import hard_rule_violations, numbers_of, numbers_read

RULES = ScoreConfig()


@pytest.mark.parametrize(
    ("a", "b", "tags"),
    [
        ("Install the package first.", "Instale primero el paquete.", []),
        ("Install it.", "Instale el paquete con apt-get antes de configurar todo el sistema operativo.", ["length_ratio"]),
        ("apt-get install foo", "apt-get install foo", ["identical_sides"]),
        ("Chapter 12 has 3 parts.", "El capítulo 13 tiene 3 partes.", ["numbers_mismatch"]),
        ("Ok", "Sí", ["too_short"]),
    ],
)
def test_hard_rules(a, b, tags):
    assert hard_rule_violations(a, b, RULES) == tags


def test_numbers_ignore_separator_conventions():
    assert numbers_of("1,000.5 MB and 2 disks") == numbers_of("2 discos y 1.000,5 MB")


@pytest.mark.parametrize(
    ("a", "b", "tags"),
    [
        # a number in digits on one side may be spelled on the other, cardinals and ordinals alike
        ("There are 2 types of device files.", "Hay dos tipos de archivos de dispositivos.", []),
        ("You should at least read the first 35 lines.", "Debería al menos leer las primeras treinta y cinco líneas.", []),
        ("The 1st argument is the root URL.", "El primer elemento es la URL raíz.", []),
        ('"4*" means 0 or more repeats of "4".', '"4*" significa cero o más repeticiones de "4".', []),
        # an article read as 1 offers a number, never requires one
        ("Install a package.", "Instale un paquete.", []),
        # a number missing or changed is still a mismatch, spelled or not
        ("Chapter 12 has 3 parts.", "El capítulo 13 tiene tres partes.", ["numbers_mismatch"]),
        ("Read the first 35 lines.", "Lea las primeras treinta líneas.", ["numbers_mismatch"]),
        ("Read 2 lines and 2 more.", "Lea dos líneas.", ["numbers_mismatch"]),
        # footnote marks are numbered by each translation's own footnotes
        ("Serial and bus mice[21], which are rare.", "Ratones serie y de bus[20], que son raros.", []),
        ("Use 2 mice[21].", "Use 3 ratones[21].", ["numbers_mismatch"]),
    ],
)
def test_numbers_match_in_digits_or_in_the_other_sides_words(a, b, tags):
    assert hard_rule_violations(a, b, RULES, "en", "es") == tags


def test_numbers_are_digits_only_where_the_languages_are_unknown_or_unread():
    assert hard_rule_violations("There are 2 types.", "Hay dos tipos.", RULES) == ["numbers_mismatch"]
    assert numbers_read("Есть два типа.", "ru") == [] and numbers_read("Hay dos tipos.", "es-MX") == ["2"]


@pytest.mark.parametrize(
    ("a", "b", "lang_b"),
    [
        # 90 characters against 30: a third as many, as Japanese writes it
        (
            "An information system can have a varying level of importance depending on the environment.",
            "情報システムはその環境に依存してさまざまな重要度を持ちます。",
            "ja",
        ),
        ("Most cursor keys work intuitively in this editor.", "大部分光标键都能直观地工作。", "zh"),
        ("The installer supports many languages.", "설치 프로그램은 여러 언어를 지원합니다.", "ko"),
    ],
)
def test_a_correct_translation_in_a_denser_script_passes_the_rules(a, b, lang_b):
    assert len(a) / len(b) > 2.5 or lang_b == "ko"  # what the rule in characters rejected (this Korean one passed)
    assert hard_rule_violations(a, b, RULES, "en", lang_b) == []


def test_a_denser_script_still_fails_the_length_rule_when_a_side_is_missing_text():
    assert hard_rule_violations(
        "Install it.", "インストール前にシステム全体の設定ファイルをすべて確認してください。", RULES, "en", "ja"
    ) == ["length_ratio"]


@pytest.mark.parametrize(
    ("a", "b", "lang_b", "tags"),
    [
        # full-width digits, kanji numerals, Arabic-Indic and Devanagari digits are the same numbers
        ("Insert 2 disks and press key 3.", "２枚のディスクを入れて、三番目のキーを押します。", "ja", []),
        ("Chapter 12 describes the 2024 release.", "第十二章介绍了二〇二四年的版本。", "zh", []),
        ("Reboot after 10 seconds.", "أعد التشغيل بعد ١٠ ثوان.", "ar", []),
        ("Wait 15 minutes.", "१५ मिनट प्रतीक्षा करें।", "hi", []),
        # English multiplicatives and hyphenated number words, which text2num alone does not read (GNOME's help)
        ("To double-click, tap twice.", "ダブルクリックするには2回タップします。", "ja", []),
        ("Two-finger scrolling may not work on all touchpads.", "2つの指でのスクロールは機能しないかもしれません。", "ja", []),
        ("Tap twice to open it.", "3回タップして開きます。", "ja", ["numbers_mismatch"]),
        # and a different number is still a mismatch
        ("Chapter 12 describes the 2024 release.", "第十三章介绍了二〇二四年的版本。", "zh", ["numbers_mismatch"]),
        ("Reboot after 10 seconds.", "أعد التشغيل بعد ١٢ ثانية.", "ar", ["numbers_mismatch"]),
    ],
)
def test_numbers_match_across_scripts(a, b, lang_b, tags):
    assert hard_rule_violations(a, b, RULES, "en", lang_b) == tags


@pytest.mark.parametrize(
    ("a", "b", "lang_b", "tags"),
    [
        # Japanese DocBook renders a cross-reference by its title alone; a splitter cut "Table 1.1." off one caption
        ('Section 1.2, "Unix-like filesystem" (basic concept)', "「Unix-like ファイルシステム」 (基本コンセプト)", "ja", []),
        (
            "List of interesting text-mode program packages",
            "表1.1 興味あるテキストモードのプログラムパッケージのリスト",
            "ja",
            [],
        ),
        ('See Section 4.7.4, "Linux security features".', "参见“Linux 安全特性”。", "zh", []),
        # a number that numbers nothing, and a part numbered differently, still mismatch
        ("Linux kernel 2.6 added udev.", "udev が追加されました。", "ja", ["numbers_mismatch"]),
        ("See Section 1.2 for details.", "Véase la sección 1.3.", "es", ["numbers_mismatch"]),
        ("Chapter 12 is new.", "第十三章是新的。", "zh", ["numbers_mismatch"]),
    ],
)
def test_a_number_that_numbers_a_part_of_the_document_may_be_on_one_side_only(a, b, lang_b, tags):
    assert hard_rule_violations(a, b, RULES, "en", lang_b) == tags


TERMS = {"package": 2.0, "package manager": 1.0, "kernel": 1.5}


def test_terms_match_whole_words_the_longer_term_first_and_stemmed_where_the_pair_says():
    english = TermMatcher(TERMS, "en")
    assert english.count("The package manager installs a package.") == {"package manager": 1, "package": 1}
    assert english.count("Packaged kernels") == {"package": 1, "kernel": 1}  # domain.stem_terms, the default
    assert TermMatcher(TERMS, "en", stem=False).count("Packaged kernels") == {}
    assert english.count("Prepackaged firmware") == {}


def test_a_sentence_is_matched_as_its_document_is():
    """Sentences were matched word for word, documents after stemming: an Arabic term met no word behind the article
    (الحزمة, the package) in the release's domain_terms, and a Russian one none of its case forms."""
    arabic = "قم بتثبيت الحزمة ثم أعد تشغيل النواة."
    assert TermMatcher({"حزمة": 2.0, "نواة": 1.5}, "ar").sentence_relevance(arabic)[1] == ["حزمة", "نواة"]
    assert TermMatcher({"пакет": 2.0}, "ru").count("Установите пакеты из списка пакетов.") == {"пакет": 2}


def test_a_korean_term_is_found_behind_its_particles():
    """Korean writes particles and endings onto the word and has no Snowball stemmer: in the en-ko release of the
    Installation Guide, 패키지 (package) was a whole word in 33 sentences and began a word in 157 (패키지를, 패키지가)."""
    korean = TermMatcher({"패키지": 2.0, "설치": 1.5, "망": 1.0}, "ko")
    assert korean.count("패키지를 설치하려면 다음 명령을 실행합니다.") == {"패키지": 1, "설치": 1}
    assert korean.count("망가진 파일") == {}, "a one-syllable term word matches whole words only"
    assert TermMatcher({"패키지": 2.0}, "ko", stem=False).count("패키지를 설치") == {}


def test_relevance_grows_with_weighted_density_and_stays_below_one():
    english = TermMatcher(TERMS, "en")
    none, _ = english.sentence_relevance("Nothing to see here at all.")
    one, terms = english.sentence_relevance("The kernel is loaded by the boot loader now.")
    many, _ = english.sentence_relevance("Kernel package kernel package.")
    assert none == 0.0 and 0 < one < many < 1
    assert terms == ["kernel"]
    assert english.sentence_relevance("") == (0.0, []) and TermMatcher({}, "en").sentence_relevance("package") == (0.0, [])


def test_terms_are_found_in_scripts_written_without_spaces():
    """A Japanese or Chinese sentence is one run of word characters: its terms matched nothing (issue 41: each
    Japanese term of an en-ja release matched 0-5 pairs, each English one 37-204)."""
    japanese = TermMatcher({"パッケージ": 1.0, "パッケージ管理": 2.0}, "ja")
    assert japanese.count("パッケージ管理システムでパッケージを入れます。") == {"パッケージ管理": 1, "パッケージ": 1}
    chinese = TermMatcher({"软件包": 1.0}, "zh")
    assert chinese.count("安装软件包之前，请先阅读发行说明。") == {"软件包": 1}
    assert chinese.sentence_relevance("安装软件包之前，请先阅读发行说明。")[0] > 0.5
