"""Pair config validation: every mistake is one line naming the file, the field and the fix."""

from pathlib import Path

import pytest
import yaml

from bitextflow.config import discover_pair_configs, load_pair_config
from bitextflow.errors import ConfigError
from tests.support import ROOT

GOOD = yaml.safe_load((ROOT / "include" / "pairs" / "en-es.yaml").read_text())


def with_target(tag: str) -> dict:
    """The good config for another target, its Spanish domain terms left out (terms must be the pair's)."""
    return {**GOOD, "target": tag, "domain": {**GOOD["domain"], "terms": {"en": GOOD["domain"]["terms"]["en"]}}}


def write(tmp_path: Path, data: dict, name: str = "en-es.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_embedded_pairs_are_valid():
    paths = discover_pair_configs(ROOT / "include" / "pairs")
    assert [p.name for p in paths][:1] == ["en-es.yaml"]
    config = load_pair_config(paths[0])
    assert (config.pair, config.dag_id) == ("en-es", "bitextflow__en_es")
    assert config.domain.terms["en"]["package"] == 2.0


@pytest.mark.parametrize("path", sorted((ROOT / "include" / "pairs" / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_worked_examples_are_valid_and_the_local_site_has_their_languages(path: Path) -> None:
    from bitextflow_local.localsite.layouts import DEFAULT_LAYOUT, site_language

    config = load_pair_config(path)
    assert set(config.domain.terms) == {config.source, config.target}, "domain terms in both languages"
    on_gnome_help = all("/help/" in str(seed) for seed in config.crawl.seeds)  # --site help: the package's languages
    assert on_gnome_help or site_language(config.target) in DEFAULT_LAYOUT.endonyms, (
        "bench/release_precision.py --pair builds the site in it"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(target="xx"), "field target: Value error, unknown language 'xx'"),
        (lambda d: d.update(target="es-Cyrl"), "field target: Value error, 'es-Cyrl': CLDR knows no es written in Cyrl"),
        (lambda d: d["domain"]["terms"].update(ja={"x": 1.0}), "Value error, domain.terms names 'ja', which is no language"),
        (lambda d: d.update(target="ja-Hira"), "field target: Value error, 'ja-Hira': ja-Hira shares its letters"),
        (lambda d: d.update(target="yue"), "field target: Value error, unknown language 'yue'; name one CLD2 or heliport"),
        (
            lambda d: d.update(target="ckb", extract={"language_identifier": "cld2"}),
            "ckb is identified by heliport only, and extract.language_identifier is cld2: set it to heliport",
        ),
        (lambda d: d.pop("crawl"), "field crawl: add it"),
        (lambda d: d["crawl"].update(max_pages="many"), "field crawl.max_pages: Input should be a valid integer"),
        (lambda d: d["crawl"].update(seeds=[]), "field crawl.seeds"),
        (lambda d: d["crawl"].update(max_page=3), "field crawl.max_page: remove it or fix its spelling"),
        (lambda d: d["domain"]["terms"]["en"].update(package=-1), "weight of term 'package' (en) must be positive"),
    ],
)
def test_invalid_config_is_one_line_naming_file_and_field(tmp_path, change, expected):
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_pair_config(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert expected in message


@pytest.mark.parametrize("tag", ["es", "spa", "es-ES", "es_419", "ES"])
def test_a_language_may_be_named_by_any_tag_and_is_kept_as_its_code(tmp_path, tag):
    assert load_pair_config(write(tmp_path, {**GOOD, "target": tag})).target == "es"


@pytest.mark.parametrize(
    ("tag", "code"),
    [
        ("he", "he"),  # the standard code, which CLD2 spells iw
        ("iw", "he"),
        ("heb", "he"),
        ("nb", "no"),  # CLD2's and fastText's Norwegian is Bokmål
        ("ckb", "ckb"),  # Sorani: heliport's; no ISO 639-1 code, so kept as ISO 639-3
        ("che", "ce"),  # Chechen: heliport's, which CLD2 names Russian
    ],
)
def test_a_pair_may_name_any_language_an_identifier_knows_in_one_spelling(tmp_path, tag, code):
    assert load_pair_config(write(tmp_path, with_target(tag), f"en-{code}.yaml")).pair == f"en-{code}"


def test_a_script_other_than_the_usual_one_is_kept_after_an_underscore():
    from bitextflow.text.languages import UnsupportedLanguageTag, code_of_tag

    usual = ("zh-Hans", "cmn", "zho", "zh-CN", "sr-Cyrl", "sr-RS", "ja-Jpan-JP", "arb")
    assert [code_of_tag(tag) for tag in usual] == ["zh", "zh", "zh", "zh", "sr", "sr", "ja", "ar"]
    # named, or implied by the region (CLDR's likely subtags); sh, retired, stood for Serbian in Latin script
    assert {tag: code_of_tag(tag) for tag in ("zh-Hant", "zh-TW", "zh_HK", "sr-Latn", "sh", "uz-Cyrl")} == {
        "zh-Hant": "zh_Hant",
        "zh-TW": "zh_Hant",
        "zh_HK": "zh_Hant",
        "sr-Latn": "sr_Latn",
        "sh": "sr_Latn",
        "uz-Cyrl": "uz_Cyrl",
    }
    with pytest.raises(UnsupportedLanguageTag, match="CLDR knows no ru written in Latn"):
        code_of_tag("ru-Latn")


def test_domain_terms_are_keyed_by_the_pairs_codes_however_written(tmp_path):
    terms = {"eng": {"package": 1.0}, "es-ES": {"paquete": 1.0}, "spa": {"núcleo": 2.0}}
    config = load_pair_config(write(tmp_path, {**GOOD, "domain": {**GOOD["domain"], "terms": terms}}))
    assert config.domain.terms == {"en": {"package": 1.0}, "es": {"paquete": 1.0, "núcleo": 2.0}}


def test_a_pair_in_another_script_is_named_with_it(tmp_path):
    config = load_pair_config(write(tmp_path, with_target("zh-TW"), "en-zh_Hant.yaml"))
    assert (config.target, config.pair, config.dag_id) == ("zh_Hant", "en-zh_Hant", "bitextflow__en_zh_Hant")


def test_file_name_must_match_languages(tmp_path):
    path = write(tmp_path, GOOD, "en-fr.yaml")
    with pytest.raises(ConfigError, match="rename it to en-es.yaml"):
        load_pair_config(path)


def test_broken_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "en-es.yaml"
    bad.write_text("source: en\ncrawl: [unclosed\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_pair_config(bad)
    with pytest.raises(ConfigError, match="no such pair config"):
        load_pair_config(tmp_path / "de-it.yaml")


def test_overrides_are_validated():
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    changed = config.with_overrides({"crawl.max_pages": 7, "crawl.seeds": ["http://127.0.0.1:9/"]})
    assert changed.crawl.max_pages == 7 and str(changed.crawl.seeds[0]) == "http://127.0.0.1:9/"
    assert config.crawl.max_pages != 7
    with pytest.raises(ConfigError, match="crawl.max_pages"):
        config.with_overrides({"crawl.max_pages": -1})
    with pytest.raises(ConfigError, match="no section 'crawler'"):
        config.with_overrides({"crawler.max_pages": 1})


def test_configuration_reference_is_current():
    from bitextflow.config import reference_markdown

    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert documented.strip() == reference_markdown().strip(), "regenerate: python -m bitextflow.config > docs/configuration.md"
