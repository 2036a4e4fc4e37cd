"""The sentence-pair gate: passes clean data, and each kind of bad data fails the expectation meant for it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pandas as pd
import pytest

from bitextflow.config import GateConfig
from bitextflow.errors import GateFailed
from bitextflow.quality import GateReport, check_sentence_pairs, enforce, length_ratio

GATE = GateConfig(min_sentence_pairs=20, max_length_ratio=3.0, max_duplicate_share=0.05)


def clean_pairs(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "url_a": [f"https://site.example/en/page{i // 5}.html" for i in range(n)],
            "url_b": [f"https://site.example/es/page{i // 5}.html" for i in range(n)],
            "lang_a": "en",
            "lang_b": "es",
            "text_a": [f"The court issued ruling number {i} today." for i in range(n)],
            "text_b": [f"El tribunal dictó hoy la sentencia número {i}." for i in range(n)],
            "alignment_score": [0.5 + (i % 50) / 100 for i in range(n)],
            "rule_tags": "length_ok;lang_ok",
            "domain_relevance": [(i % 10) / 10 for i in range(n)],
            "domain_terms": "court;tribunal",
            "pair_hash": [f"{i:016x}" for i in range(n)],
        }
    )


def failed(report: GateReport) -> list[str]:
    """The failing expectations, as ``type(column)`` (the part before the colon)."""
    return sorted(f.split(":")[0] for f in report.failures)


def test_clean_frame_passes_and_report_is_json() -> None:
    report = check_sentence_pairs(clean_pairs(), GATE, "en", "es")
    assert report.success, report.failures
    assert report.failures == []
    assert report.evaluated == report.statistics["evaluated_expectations"] == 17
    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert data["success"] is True
    assert data["result"]["suite_name"] == "sentence_pairs"
    enforce(report)  # passes silently


def _wrong_language(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[3, "lang_b"] = "pt"
    return df


def _score_out_of_range(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[5, "alignment_score"] = 1.7
    return df


def _huge_length_ratio(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[7, "text_b"] = "Sí."  # 39 characters against 3
    return df


def _too_many_duplicates(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[0:4, "pair_hash"] = "feedfacecafebeef"  # 4 repeats in 40 rows = 10% > 5%
    return df


def _too_few_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df.head(12).copy()


@pytest.mark.parametrize(
    ("spoil", "expectation", "offending"),
    [
        (_wrong_language, "expect_column_values_to_be_in_set(lang_b)", "'pt'"),
        (_score_out_of_range, "expect_column_values_to_be_between(alignment_score)", "1.7"),
        (_huge_length_ratio, "expect_column_values_to_be_between(length_ratio)", "13.0"),
        (_too_many_duplicates, "expect_column_values_to_be_null(repeated_pair_hash)", "'feedfacecafebeef'"),
        (_too_few_rows, "expect_table_row_count_to_be_between", "observed 12"),
    ],
    ids=["wrong-language", "score-out-of-range", "length-ratio", "duplicates", "too-few-rows"],
)
def test_each_defect_fails_its_own_expectation(
    spoil: Callable[[pd.DataFrame], pd.DataFrame], expectation: str, offending: str
) -> None:
    report = check_sentence_pairs(spoil(clean_pairs()), GATE, "en", "es")
    assert not report.success
    assert failed(report) == [expectation]
    assert offending in report.failures[0]
    with pytest.raises(GateFailed) as caught:
        enforce(report)
    message = str(caught.value)
    assert expectation in message and "\n" not in message


def test_duplicates_within_allowed_share_pass() -> None:
    df = clean_pairs()
    df.loc[0:2, "pair_hash"] = "feedfacecafebeef"  # 2 repeats in 40 rows = 5%: at the limit
    assert check_sentence_pairs(df, GATE, "en", "es").success


def test_nulls_blank_text_and_missing_columns_are_reported() -> None:
    df = clean_pairs()
    df.loc[1, "url_a"] = None
    df.loc[2, "text_a"] = " " * 40  # as long as its partner, so only the blank-text check fires
    df = df.drop(columns=["domain_terms"])
    report = check_sentence_pairs(df, GATE, "en", "es")
    assert failed(report) == [
        "expect_column_values_to_match_regex(text_a)",
        "expect_column_values_to_not_be_null(url_a)",
        "expect_table_columns_to_match_set",
    ]
    assert any("missing columns domain_terms" in f for f in report.failures)


def test_empty_frame_passes_when_no_rows_are_required() -> None:
    report = check_sentence_pairs(clean_pairs().head(0), GATE.model_copy(update={"min_sentence_pairs": 0}), "en", "es")
    assert report.success, report.failures


def test_infinite_score_keeps_report_valid_json() -> None:
    df = clean_pairs()
    df.loc[0, "domain_relevance"] = float("inf")
    report = check_sentence_pairs(df, GATE, "en", "es")
    assert failed(report) == ["expect_column_values_to_be_between(domain_relevance)"]
    json.dumps(report.to_dict(), allow_nan=False)


def test_length_ratio_is_finite_for_empty_sides() -> None:
    ratios = length_ratio(pd.Series(["abcd", "", "ab", None]), pd.Series(["ab", "abc", "ab", "x"]))
    assert ratios.tolist() == [2.0, 3.0, 1.0, 1.0]


def test_importing_the_gate_does_not_import_great_expectations() -> None:
    code = "import sys, bitextflow.quality; print('great_expectations' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
