"""Pair configuration: the one documented source of every option of a language-pair pipeline.

A pair config is a YAML file under ``include/pairs/`` (one per language pair). It is validated here
with pydantic; every field is described in ``docs/configuration.md``. An invalid file raises
:class:`~bitextflow.errors.ConfigError` with one line that names the file, the field and the fix.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError, field_validator, model_validator

from bitextflow.errors import ConfigError


@functools.cache
def known_languages() -> frozenset[str]:
    """ISO 639-1 codes that CLD2, our document language identifier, can recognise."""
    import pycld2

    return frozenset(code for _name, code in pycld2.LANGUAGES if len(code) == 2 and code.isalpha())


LanguageCode = Annotated[str, Field(min_length=2, max_length=2, pattern=r"^[a-z]{2}$")]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CrawlConfig(_Section):
    seeds: list[HttpUrl] = Field(min_length=1, description="Start URLs; fetched first.")
    max_pages: int = Field(2000, ge=1, description="Stop after this many fetched URLs.")
    max_depth: int = Field(30, ge=0, description="Links further than this from a seed are not followed.")
    delay_seconds: float = Field(1.0, ge=0, description="Minimum pause between two requests to one host.")
    timeout_seconds: float = Field(20.0, gt=0, description="Per-request timeout.")
    max_body_bytes: int = Field(10_000_000, ge=1024, description="Larger responses are truncated.")
    user_agent: str = Field(
        "bitextflow/0.1 (+https://github.com/bitextflow/bitextflow)", min_length=1,
        description="Sent with every request and matched against robots.txt groups.",
    )
    warc_max_bytes: int = Field(20_000_000, ge=100_000, description="A WARC shard is closed past this size.")


class ExtractConfig(_Section):
    min_sentence_tokens: int = Field(3, ge=1, description="Shorter sentences are dropped (counted).")
    max_sentence_tokens: int = Field(120, ge=1, description="Longer sentences are dropped (counted).")


class AlignConfig(_Section):
    min_alignment_score: float = Field(0.1, ge=0, le=1, description="Sentence pairs scoring lower are dropped.")
    document_pairs_per_shard: int = Field(25, ge=1, description="Document pairs per sentence-alignment task.")


class ScoreConfig(_Section):
    max_length_ratio: float = Field(2.5, ge=1, description="Longer side / shorter side, in characters.")
    min_characters: int = Field(3, ge=1, description="Each side needs at least this many characters.")


class DomainConfig(_Section):
    name: str = Field(min_length=1, description="Name of the domain the corpus is about.")
    terms: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="Per language code: term -> weight (positive)."
    )
    min_relevance: float = Field(0.0, ge=0, le=1, description="Pairs below this relevance are dropped.")

    @field_validator("terms")
    @classmethod
    def _positive_weights(cls, terms: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for lang, weighted in terms.items():
            for term, weight in weighted.items():
                if weight <= 0:
                    raise ValueError(f"weight of term {term!r} ({lang}) must be positive, got {weight}")
        return {lang: {t.lower(): w for t, w in weighted.items()} for lang, weighted in terms.items()}


class GateConfig(_Section):
    min_sentence_pairs: int = Field(1, ge=0, description="Fewer released pairs fail the gate.")
    max_length_ratio: float = Field(3.0, ge=1, description="Any pair with a larger char-length ratio fails it.")
    max_duplicate_share: float = Field(0.05, ge=0, le=1, description="Share of repeated pairs allowed.")


class StorageConfig(_Section):
    bucket: str = Field("bitextflow", min_length=3, max_length=63, pattern=r"^[a-z0-9][a-z0-9.-]+[a-z0-9]$")


class PairConfig(_Section):
    source: LanguageCode = Field(description="ISO 639-1 code of the first language (e.g. en).")
    target: LanguageCode = Field(description="ISO 639-1 code of the second language (e.g. es).")
    description: str = Field("", description="Free text shown on the DAG in the Airflow UI.")
    crawl: CrawlConfig
    extract: ExtractConfig = ExtractConfig()
    align: AlignConfig = AlignConfig()
    score: ScoreConfig = ScoreConfig()
    domain: DomainConfig
    gate: GateConfig = GateConfig()
    storage: StorageConfig = StorageConfig()

    @field_validator("source", "target")
    @classmethod
    def _known_language(cls, code: str) -> str:
        if code not in known_languages():
            raise ValueError(f"unknown language code {code!r}; use an ISO 639-1 code CLD2 knows, e.g. en, es, fr, de")
        return code

    @model_validator(mode="after")
    def _distinct_languages(self) -> PairConfig:
        if self.source == self.target:
            raise ValueError(f"source and target are both {self.source!r}; a pair needs two languages")
        return self

    @property
    def pair(self) -> str:
        """The pair's name, e.g. ``en-es``; used in storage keys and release paths."""
        return f"{self.source}-{self.target}"

    @property
    def dag_id(self) -> str:
        return f"bitextflow__{self.source}_{self.target}"

    def with_overrides(self, overrides: dict[str, Any] | None) -> PairConfig:
        """A copy with ``section.field`` values replaced (e.g. from an Airflow run's conf), re-validated."""
        if not overrides:
            return self
        data = self.model_dump(mode="json")
        for dotted, value in overrides.items():
            node = data
            *parents, leaf = dotted.split(".")
            for name in parents:
                if not isinstance(node.get(name), dict):
                    raise ConfigError(f"override {dotted!r}: no section {name!r}; sections: {', '.join(data)}")
                node = node[name]
            node[leaf] = value
        try:
            return PairConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"overrides {sorted(overrides)}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    """One line: the dotted field, what is wrong and how to fix it."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "(top level)"
        kind = error["type"]
        if kind == "missing":
            fix = "add it (see docs/configuration.md)"
        elif kind == "extra_forbidden":
            fix = "remove it or fix its spelling (see docs/configuration.md)"
        else:
            fix = error["msg"]
        value = "" if kind in ("missing",) else f" (got {error.get('input')!r:.60})"
        problems.append(f"field {field}: {fix}{value}")
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return problems[0] + more


def load_pair_config(path: str | Path) -> PairConfig:
    """Read and validate one pair config; raise ConfigError with a one-line message on any problem."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such pair config; create it from include/pairs/en-es.yaml") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" line {where.line + 1}" if where else ""
        raise ConfigError(f"{path}:{line} is not valid YAML ({getattr(exc, 'problem', exc)}); fix the syntax") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (source, target, crawl, domain, ...)")
    try:
        config = PairConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_first_error(exc)}") from None
    expected = f"{config.source}-{config.target}.yaml"
    if path.suffix in (".yaml", ".yml") and path.stem != f"{config.source}-{config.target}":
        raise ConfigError(f"{path}: file name must match its languages; rename it to {expected}")
    return config


def discover_pair_configs(directory: str | Path) -> list[Path]:
    """All pair configs in ``directory``, sorted so DAG order is stable."""
    return sorted(p for p in Path(directory).glob("*.y*ml") if p.suffix in (".yaml", ".yml"))


def reference_markdown() -> str:
    """docs/configuration.md, generated from the models so the documentation cannot drift."""
    lines = [
        "# Pair configuration reference",
        "",
        "Generated from `include/bitextflow/config.py` (`python -m bitextflow.config > docs/configuration.md`).",
        "A pair config is `include/pairs/<source>-<target>.yaml`; any field can be overridden for one run",
        "with the DAG param `overrides` (`{\"section.field\": value}`) or `bitextflow ... --set section.field=value`.",
        "",
    ]

    def table(model: type[BaseModel], prefix: str) -> None:
        lines.extend(["| field | type | default | meaning |", "|---|---|---|---|"])
        for name, info in model.model_fields.items():
            annotation = getattr(info.annotation, "__name__", None) or str(info.annotation).replace("typing.", "")
            default = "required" if info.is_required() else f"`{info.get_default(call_default_factory=True)!r}`"
            lines.append(f"| `{prefix}{name}` | {annotation} | {default} | {info.description or ''} |")
        lines.append("")

    top = {n: i for n, i in PairConfig.model_fields.items() if not (isinstance(i.annotation, type) and issubclass(i.annotation, _Section))}
    lines.append("## Top level")
    lines.append("")
    lines.extend(["| field | type | default | meaning |", "|---|---|---|---|"])
    for name, info in top.items():
        default = "required" if info.is_required() else f"`{info.get_default()!r}`"
        lines.append(f"| `{name}` | str | {default} | {info.description or ''} |")
    lines.append("")
    for name, info in PairConfig.model_fields.items():
        if name in top:
            continue
        lines.extend([f"## `{name}`", ""])
        table(info.annotation, f"{name}.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference_markdown())
