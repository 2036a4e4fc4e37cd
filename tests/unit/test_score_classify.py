"""Hard rules and term relevance: the walking-skeleton scorers."""

import pytest

from bitextflow.config import ScoreConfig
from bitextflow.score import hard_rule_violations, numbers_of
from bitextflow.text.terms import relevance, term_matches

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


TERMS = {"package": 2.0, "package manager": 1.0, "kernel": 1.5}


def test_term_matching_is_on_whole_tokens():
    assert term_matches("The package manager installs a package.", TERMS) == {"package": 2, "package manager": 1}
    assert term_matches("Packaged kernels", TERMS) == {}


def test_relevance_grows_with_weighted_density_and_stays_below_one():
    none, _ = relevance("Nothing to see here at all.", TERMS)
    one, terms = relevance("The kernel is loaded by the boot loader now.", TERMS)
    many, _ = relevance("Kernel package kernel package.", TERMS)
    assert none == 0.0 and 0 < one < many < 1
    assert terms == ["kernel"]
