"""Pair configuration: the one documented source of every option of a language-pair pipeline.

A pair config is a YAML file under ``include/pairs/`` (one per language pair). It is validated here
with pydantic; every field is described in ``docs/configuration.md``. An invalid file raises
:class:`~bitextflow.errors.ConfigError` with one line that names the file, the field and the fix.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any, Literal

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
    """The focused crawler (docs/crawl.md): politeness, limits, frontier ranking, checkpoints."""

    seeds: list[HttpUrl] = Field(min_length=1, description="Start URLs; fetched first, whatever the strategy.")
    strategy: str = Field(
        "url-rules",
        description="Frontier ranking: bfs, terms (ILSP-FC link score), url-rules (language markers in URLs), "
        "smart (URL models; falls back to url-rules when crawl.url_models has none).",
    )
    url_models: str | None = Field(None, description="Folder or s3:// prefix of the URL models the smart strategy loads.")
    terms_other_language_bonus: float = Field(
        10.0, ge=0, description="terms strategy: the constant c added to links that point to the other language."
    )
    max_pages: int = Field(2000, ge=1, description="Stop after this many fetched URLs (responses written to WARC).")
    max_pages_per_host: int | None = Field(None, ge=1, description="Fetch at most this many URLs from one host.")
    max_depth: int = Field(30, ge=0, description="Links further than this from a seed are not followed.")
    time_limit_seconds: float | None = Field(None, gt=0, description="Stop fetching after this long (resumed runs included).")
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Hosts besides the seeds' whose links are followed ('*': any host)."
    )
    include_paths: dict[str, list[str]] = Field(
        default_factory=dict, description="Per host ('*': all): only URLs whose path?query matches one regex are followed."
    )
    exclude_paths: dict[str, list[str]] = Field(
        default_factory=dict, description="Per host ('*': all): URLs whose path?query matches a regex are not followed."
    )
    skip_extensions: list[str] = Field(
        default_factory=lambda: "png jpg jpeg gif svg webp ico bmp tif tiff css js mjs json woff woff2 ttf otf eot mp3 mp4 "
        "m4a ogg oga ogv webm avi mov wav flac zip gz tgz bz2 xz 7z rar tar deb rpm iso img exe msi dmg apk bin pdf".split(),
        description="Links to files with these extensions are not fetched (keep it consistent with content_types).",
    )
    content_types: list[str] = Field(
        default_factory=lambda: ["text/html", "application/xhtml+xml", "text/plain"],
        description="2xx responses of other types are refused after the headers (body not read); [] allows "
        "all; a response without Content-Type passes.",
    )
    allow_private_addresses: list[str] = Field(
        default_factory=list,
        description="Addresses or networks (e.g. 127.0.0.1, 10.0.0.0/8) that may be fetched although private, "
        "loopback, link-local or multicast; all others such are refused.",
    )
    concurrency: int = Field(8, ge=1, description="Requests in flight at once, all hosts together.")
    per_host_concurrency: int = Field(2, ge=1, description="Requests in flight at once to one host.")
    delay_seconds: float = Field(1.0, ge=0, description="Minimum pause between two requests to one host.")
    max_robots_delay_seconds: float = Field(30.0, ge=0, description="A robots.txt Crawl-delay above this is capped to it.")
    connect_timeout_seconds: float = Field(10.0, gt=0, description="Time to open a connection.")
    read_timeout_seconds: float = Field(20.0, gt=0, description="Longest wait for the next bytes of a response.")
    timeout_seconds: float = Field(60.0, gt=0, description="Total time for one request, body included.")
    max_retries: int = Field(2, ge=0, description="Retries of a URL after a 5xx answer or a timeout.")
    retry_backoff_seconds: float = Field(1.0, ge=0, description="First retry waits this long; each next one twice as long.")
    max_redirects: int = Field(5, ge=0, description="Longest redirect chain followed; loops are detected and dropped.")
    max_body_bytes: int = Field(10_000_000, ge=1024, description="Larger responses are truncated (WARC-Truncated: length).")
    scout_pages: int = Field(
        50, ge=0, description="Language scouting: a host with no page in the target language after this many "
        "HTML pages is dropped (0: never).",
    )
    user_agent: str = Field(
        "bitextflow/0.1 (+https://github.com/bitextflow/bitextflow)", min_length=1,
        description="Sent with every request and matched against robots.txt groups.",
    )
    warc_max_bytes: int = Field(20_000_000, ge=100_000, description="A WARC shard is closed past this size.")
    checkpoint_every_pages: int = Field(200, ge=1, description="Frontier and seen-set are saved to S3 after this many pages...")
    checkpoint_every_seconds: float = Field(120.0, gt=0, description="... or after this long, whichever comes first.")

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, strategy: str) -> str:
        if strategy not in ("bfs", "terms", "url-rules", "smart"):
            raise ValueError(f"unknown strategy {strategy!r}; choose bfs, terms, url-rules or smart")
        return strategy

    @field_validator("include_paths", "exclude_paths")
    @classmethod
    def _valid_patterns(cls, patterns: dict[str, list[str]]) -> dict[str, list[str]]:
        import re

        for host, regexes in patterns.items():
            for regex in regexes:
                try:
                    re.compile(regex)
                except re.error as exc:
                    raise ValueError(f"pattern {regex!r} of host {host!r} is not a valid regex ({exc})") from None
        return patterns

    @field_validator("allow_private_addresses")
    @classmethod
    def _valid_networks(cls, networks: list[str]) -> list[str]:
        import ipaddress

        for network in networks:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise ValueError(f"{network!r} is not an IP address or network (e.g. 127.0.0.1, 10.0.0.0/8)") from None
        return networks


class ExtractConfig(_Section):
    min_sentence_tokens: int = Field(
        6, ge=1, description="Sentences with fewer whitespace tokens are dropped (counted); 6 as in the MaCoCu DSI paper."
    )
    max_sentence_tokens: int = Field(
        50, ge=1, description="Sentences with more whitespace tokens are dropped (counted); 50 as in the MaCoCu DSI paper."
    )
    require_end_punctuation: bool = Field(
        False, description="Drop sentences that do not end in punctuation (DSI filter; drops headings and list items)."
    )
    normalise_punctuation: bool = Field(True, description="Moses-style punctuation normalisation of sentences (sacremoses).")
    plain_text: bool = Field(
        False, description="Also make documents of text/plain responses (blank-line separated paragraphs); off by default "
        "because sites mostly serve plain-text dumps of their HTML pages, which would make those near-duplicates.",
    )  # fmt: skip
    extraction_focus: str = Field(
        "recall", pattern=r"^(balanced|precision|recall)$",
        description="trafilatura's main-content trade-off: `recall`, `precision` or `balanced`.",
    )  # fmt: skip
    max_page_bytes: int = Field(
        1_000_000, ge=10_000, description="HTML payloads are cut to this many bytes before parsing (counted repair)."
    )
    near_duplicate_threshold: float = Field(
        0.8, gt=0, le=1, description="Shared main paragraphs / paragraphs of the shorter document above which two "
        "documents of one language are near-duplicates (ILSP-FC); the longer is kept.",
    )  # fmt: skip
    duplicate_sentences: str = Field(
        "flag", pattern=r"^(flag|drop)$", description="A sentence seen before in the shard in the same language (letters only): flagged in the "
        "`duplicate` column (alignment needs each document whole) or dropped (counted).",
    )  # fmt: skip


class AlignConfig(_Section):
    min_alignment_score: float = Field(0.1, ge=0, le=1, description="Sentence pairs scoring lower are dropped.")
    document_pairs_per_shard: int = Field(25, ge=1, description="Document pairs per sentence-alignment task.")
    sentence_aligner: Literal["gale-church", "hunalign", "vecalign"] = Field(
        "gale-church",
        description="Sentence aligner: `gale-church` (length only), `hunalign` (bilingual dictionary from "
        "Debian + length; a pair without a dictionary package aligns by length and identical words) or "
        "`vecalign` (multilingual sentence embeddings; most accurate, slowest on CPU). See docs/align.md.",
    )
    encoder_model: str | None = Field(
        None, description="Model folder for `vecalign` (any transformers encoder); default: the converted multilingual-e5-small."
    )


class ScoreConfig(_Section):
    max_length_ratio: float = Field(2.5, ge=1, description="Longer side / shorter side, in characters.")
    min_characters: int = Field(3, ge=1, description="Each side needs at least this many characters.")


class DomainConfig(_Section):
    name: str = Field(min_length=1, description="Name of the domain the corpus is about.")
    terms: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="Per language code: term -> weight (positive)."
    )
    min_relevance: float = Field(0.0, ge=0, le=1, description="Pairs below this relevance are dropped.")
    min_document_relevance: float = Field(
        0.0, ge=0, description="Documents whose ILSP-FC relevance p (sum of term weight x location weight x count) is "
        "lower are dropped at extraction (counted).",
    )  # fmt: skip
    min_document_terms: int = Field(
        0, ge=0, description="Documents with fewer distinct domain terms (ILSP-FC m) are dropped at extraction (counted)."
    )
    location_weights: dict[str, float] = Field(
        default_factory=lambda: {"title": 10.0, "metadata": 4.0, "keywords": 2.0, "text": 1.0},
        description="Weight of a term found in the page title, description, keywords or main text (ILSP-FC).",
    )
    stem_terms: bool = Field(True, description="Match terms after Snowball stemming (PyStemmer) where the language has one.")

    @field_validator("location_weights")
    @classmethod
    def _known_locations(cls, weights: dict[str, float]) -> dict[str, float]:
        unknown = set(weights) - {"title", "metadata", "keywords", "text"}
        if unknown:
            raise ValueError(f"unknown locations {sorted(unknown)}; use title, metadata, keywords, text")
        return weights

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


# Kubernetes names: a DNS-1123 label (namespaces, secrets) and a quantity such as 500m, 4, 16Gi.
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
_QUANTITY = r"^([0-9]+(\.[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"


class Toleration(_Section):
    """One Kubernetes toleration, e.g. ``{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}``."""

    key: str | None = Field(None, description="Taint key to tolerate; empty with operator Exists tolerates every taint.")
    operator: Literal["Exists", "Equal"] = Field("Equal", description="`Equal` (key and value match) or `Exists` (key only).")
    value: str | None = Field(None, description="Taint value; only with operator Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="Taint effect to tolerate; empty: all effects."
    )
    toleration_seconds: int | None = Field(
        None, ge=0, description="NoExecute only: how long the pod stays bound after the taint appears."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise ValueError("a toleration with operator Exists takes no value; remove value or use operator Equal")
        if self.operator == "Equal" and not self.key:
            raise ValueError("a toleration with operator Equal needs a key; add key or use operator Exists")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("toleration_seconds applies only to effect NoExecute")
        return self


class GpuDispatchConfig(_Section):
    """Where GPU steps (score, classify) run: in the Airflow worker, or as a pod (docs/gpu.md)."""

    mode: Literal["in-process", "kubernetes"] = Field(
        "in-process", description="`in-process`: the step runs in the Airflow worker; `kubernetes`: "
        "a KubernetesPodOperator pod runs the same `bitextflow <stage>` command in `gpu.image`.",
    )  # fmt: skip
    image: str | None = Field(
        None, description="Image of the pod (built from docker/gpu-worker.Dockerfile); required in kubernetes mode."
    )
    namespace: str = Field("default", pattern=_DNS_LABEL, description="Kubernetes namespace of the pod.")
    gpus: int = Field(1, ge=0, le=16, description="`nvidia.com/gpu` limit of the pod (0: a CPU-only pod).")
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels the pod must land on, e.g. `{nvidia.com/gpu.present: \"true\"}`."
    )
    tolerations: list[Toleration] = Field(
        default_factory=list, description="Taints the pod tolerates (GPU nodes are often tainted `nvidia.com/gpu`); "
        "each: key, operator (Equal/Exists), value, effect, toleration_seconds.",
    )  # fmt: skip
    cpu: str = Field("2", pattern=_QUANTITY, description="CPU request of the pod (a Kubernetes quantity: 500m, 2).")
    memory: str = Field("8Gi", pattern=_QUANTITY, description="Memory request and limit of the pod (a quantity: 512Mi, 8Gi).")
    s3_secret: str = Field(
        "bitextflow-s3", pattern=_DNS_LABEL,
        description="Kubernetes secret whose keys BITEXTFLOW_S3_ACCESS_KEY_ID, BITEXTFLOW_S3_SECRET_ACCESS_KEY "
        "(and optional BITEXTFLOW_S3_ENDPOINT_URL, BITEXTFLOW_S3_REGION) become the pod's S3 settings; "
        "credentials never enter the pod spec.",
    )  # fmt: skip
    kubernetes_conn_id: str = Field(
        "kubernetes_default", min_length=1, description="Airflow connection to the cluster (when in_cluster is not true)."
    )
    in_cluster: bool | None = Field(
        None, description="true: use the service account of the Airflow worker's own pod; empty: as the connection says."
    )
    config_file: str | None = Field(None, description="Path of a kubeconfig file on the Airflow worker (instead of the connection's).")
    service_account: str | None = Field(None, pattern=_DNS_LABEL, description="Service account the pod runs as; empty: the namespace default.")

    @model_validator(mode="after")
    def _image_when_kubernetes(self) -> GpuDispatchConfig:
        if self.mode == "kubernetes" and not self.image:
            raise ValueError("mode kubernetes needs gpu.image (build docker/gpu-worker.Dockerfile and push it)")
        return self


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
    gpu: GpuDispatchConfig = GpuDispatchConfig()

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
            annotation = annotation.replace("|", "\\|")  # `str | None` must not split the table cell
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
