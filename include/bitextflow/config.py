"""Pair configuration: the one documented source of every option of a language-pair pipeline.

A pair config is a YAML file under ``include/pairs/`` (one per language pair). It is validated here
with pydantic; every field is described in ``docs/configuration.md``. An invalid file raises
:class:`~bitextflow.errors.ConfigError` with one line that names the file, the field and the fix.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bitextflow.errors import ConfigError

# A project code: ISO 639-1 or 639-3, with the ISO 15924 script where it is not the language's usual one (sr_Latn)
LanguageCode = Annotated[str, Field(min_length=2, max_length=8, pattern=r"^[a-z]{2,3}(_[A-Z][a-z]{3})?$")]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def valid_warc_locations(locations: list[str]) -> list[str]:
    """WARC locations as ``crawl.warcs`` takes them (a key, a prefix ending in /, a glob, s3://bucket/key), checked."""
    for location in locations:
        key = location.removeprefix("s3://").partition("/")[2] if location.startswith("s3://") else location
        if not key.strip():
            raise ValueError(f"WARC location {location!r} names no key; give a key, a prefix ending in / or s3://bucket/key")
    return locations


#: WARC locations (crawl.warcs, policy.robots_warcs): keys, prefixes ending in /, globs, s3://bucket/key
WarcLocations = Annotated[list[str], AfterValidator(valid_warc_locations)]


class WarcBucket(_Section):
    """Where a bucket named in ``crawl.warcs`` lives when it is not on the storage endpoint (docs/extract.md)."""

    endpoint_url: str = Field(
        pattern=r"^https?://", description="S3 endpoint of the bucket, e.g. https://s3.us-east-1.amazonaws.com (Common Crawl)."
    )
    region: str = Field("us-east-1", description="Region of the bucket (Common Crawl: us-east-1).")
    anonymous: bool = Field(
        False,
        description="Unsigned requests (botocore UNSIGNED), for public buckets: no credentials are sent. Off: boto3's own "
        "credential chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role), never the storage ones.",
    )


#: Largest ``crawl.max_body_bytes``: every fetch in flight buffers up to that much of its response.
MAX_BODY_BYTES = 100_000_000
#: Most the crawl's fetches in flight may buffer together: ``crawl.concurrency`` x ``crawl.max_body_bytes``.
MAX_BUFFERED_BYTES = 4_000_000_000


#: Patterns of ``crawl.include_paths`` (and as many of ``exclude_paths``), all hosts together: 100,000 cost 144 ms a link.
MAX_PATH_PATTERNS = 1_000


def path_pattern(regex: str) -> Any:
    """A ``crawl.include_paths`` / ``exclude_paths`` regex, compiled by RE2 (PyPI ``google-re2``), whose matching time
    is linear in the URL whatever the pattern: Python's ``re`` backtracks, and ``(a+)+$`` took seconds on a path of 24
    characters, inside the crawl's event loop. RE2 has no backreferences or lookaround; such a pattern is a
    ``ValueError`` naming the fix."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is raised, not also written to stderr
    try:
        return re2.compile(regex, options)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"pattern {regex!r} is not a regex RE2 takes ({reason}); write it without backreferences and lookaround "
            "(RE2 matches in linear time, see docs/crawl.md)"
        ) from None


class CommonCrawlIndex(_Section):
    """A columnar index with Common Crawl's schema (cc-index-table) as the run's source: the sites whose captures hold
    both languages of the pair, their records fetched by byte range (docs/commoncrawl.md)."""

    table: str = Field(
        "s3://commoncrawl/cc-index/table/cc-main/warc/",
        pattern=r"^s3://[a-z0-9][a-z0-9.-]+[a-z0-9]/.*/$",
        description="The index table: s3://bucket/prefix/ holding Parquet files in crawl=<crawl>/subset=<subset>/ folders "
        "with Common Crawl's columns (url, url_host_registered_domain, content_languages, content_mime_detected, "
        "fetch_status, warc_filename, warc_record_offset, warc_record_length). Its bucket is on the storage endpoint "
        "unless crawl.warc_buckets places it elsewhere (Common Crawl's: anonymous, us-east-1).",
    )
    crawls: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]] = Field(
        min_length=1,
        description="Crawls to select from, e.g. [CC-MAIN-2024-33]; a URL captured in several is fetched once, from the "
        "first crawl listed, and a host's robots.txt is its capture in the first crawl listed that has one (list the "
        "newest first: the site owner's latest word).",
    )
    warc_root: str = Field(
        "s3://commoncrawl/",
        pattern=r"^s3://[a-z0-9][a-z0-9.-]+[a-z0-9]/(.*/)?$",
        description="Where the index's warc_filename values are relative to (s3://bucket/ or s3://bucket/prefix/); "
        "bucket endpoints as for table.",
    )
    min_captures: int = Field(
        10, ge=1, description="A site (registered domain) is selected when it has at least this many captures whose "
        "primary language (the first of content_languages) is the source, and as many in the target.",
    )  # fmt: skip
    min_share: float = Field(
        0.0, ge=0, le=1, description="... and each of the two languages is at least this share of the site's captures "
        "(of every language, after the MIME and status filters); 0: no share condition.",
    )  # fmt: skip
    max_captures_per_language: int = Field(
        1000, ge=1, description="Most records fetched per selected site and language, the first in index order "
        "(Common Crawl's files are sorted by SURT URL, so both languages' first paths).",
    )  # fmt: skip
    mime_types: list[str] = Field(
        default_factory=lambda: ["text/html", "application/xhtml+xml"],
        min_length=1,
        description="Captures counted and fetched: their content_mime_detected is one of these.",
    )
    statuses: list[int] = Field(
        default_factory=lambda: [200],
        min_length=1,
        description="Captures counted and fetched: their fetch_status is one of these.",
    )
    max_tasks: int = Field(
        256, ge=1, description="Most tasks of the index scans (cc_sites, cc_records): index files are grouped into at "
        "most this many batches (keep it at or under Airflow's max_map_length).",
    )  # fmt: skip
    fetch_concurrency: int = Field(8, ge=1, le=64, description="Ranged GETs in flight per cc_fetch task.")
    fetch_attempts: int = Field(
        5, ge=1, le=20, description="Tries of one record's ranged GET before its task fails (Airflow then retries it "
        "and it resumes from its checkpoint); a WARC file that does not exist is counted, not retried.",
    )  # fmt: skip
    fetch_backoff_seconds: float = Field(
        0.5, ge=0, le=60, description="Wait before the second try of a ranged GET, doubled for each further try (plus up to "
        "as much again at random, so that tasks do not retry in step)."
    )  # fmt: skip


class CrawlConfig(_Section):
    """The focused crawler (docs/crawl.md): politeness, limits, frontier ranking, checkpoints."""

    warcs: WarcLocations = Field(
        default_factory=list,
        description="Ingest existing WARC files instead of crawling (nothing is fetched; seeds must be empty): keys in "
        "storage.bucket or s3://bucket/key (on the storage endpoint unless crawl.warc_buckets says otherwise), each an exact key, a prefix ending in / (its .warc and "
        ".warc.gz files) or a glob (*, ?, [...]). Each file becomes one extract shard. See docs/extract.md.",
    )
    warc_buckets: dict[str, WarcBucket] = Field(
        default_factory=dict,
        description="Buckets of crawl.warcs on another S3 endpoint, by bucket name: endpoint_url, region, anonymous; e.g. "
        "{commoncrawl: {endpoint_url: https://s3.us-east-1.amazonaws.com, anonymous: true}}. Other buckets are on the "
        "storage endpoint.",
    )
    index: CommonCrawlIndex | None = Field(
        None,
        description="Select bilingual sites in a columnar index with Common Crawl's schema and fetch their records by "
        "byte range instead of crawling (seeds must be empty): the stages cc_sites, cc_select, cc_records and cc_fetch "
        "replace the crawl. See docs/commoncrawl.md.",
    )
    seeds: list[HttpUrl] = Field(
        default_factory=list,
        validate_default=True,
        description="Start URLs; fetched first, whatever the strategy. Required unless crawl.warcs or crawl.index is set.",
    )
    strategy: str = Field(
        "url-rules",
        description="Frontier ranking: bfs, terms (ILSP-FC link score), url-rules (language markers in URLs), "
        "smart (URL models; falls back to url-rules when crawl.url_models has none).",
    )
    url_models: str | None = Field(
        None,
        description="URL models the smart strategy loads: a folder, s3://<bucket>/models/<pair>/url/v<N>/, or 'latest' "
        "(the pair's newest version in storage.bucket; none yet: url-rules).",
    )
    smart_promote_above: float = Field(
        0.9,
        ge=0,
        le=1.01,
        description="smart strategy: the URL rules rank the frontier; the one link a fetched page names as its version in "
        "the other language (language switcher) is raised above every link the rules do not see completing a pair when "
        "the URL models give it P(other language) x P(parallel) of at least this (above 1: never, the rules alone). "
        "Chosen by leave-one-site-out over sites of unseen URL layouts (docs/crawl.md).",
    )
    smart_rerank_similar: int = Field(
        8,
        ge=0,
        le=1000,
        description="smart strategy: a fetched page in a pair language re-scores, besides the waiting URLs it links to, "
        "this many waiting URLs sharing the most URL tokens with it (its possible translations; 0: links only).",
    )
    smart_rerank_min_language: float = Field(
        0.5,
        ge=0,
        le=1,
        description="smart strategy: a waiting URL is re-scored only when the URL language model gives it at least "
        "this P(other language of the pair); lower re-scores more URLs with the costly URL-pair model.",
    )
    smart_skip_parallel_below: float = Field(
        0.02,
        ge=0,
        le=1,
        description="smart strategy: links with P(in a pair language) below this are not given to the URL-pair model "
        "(their priority stays below it whatever the model says); 0 asks the model for every link.",
    )
    smart_common_token: int = Field(
        64,
        ge=1,
        le=1_000_000,
        description="smart strategy: URL tokens carried by more waiting URLs than this (html, www) are not used to find "
        "the waiting URLs similar to a fetched page.",
    )
    train_url_models: bool = Field(
        False,
        description="After align_documents, train the smart strategy's URL models on this run's crawl log and "
        "document pairs and publish them as models/<pair>/url/v<N>/ (task train_url_models).",
    )
    url_model_kind: Literal["ngram", "encoder"] = Field(
        "ngram",
        description="URL models train_url_models trains: ngram (hashed URL n-grams and token swaps, logistic regression; "
        "seconds on a CPU, trained on during the crawl) or encoder (the multilingual encoder fine-tuned, "
        "crawl.url_model_base/layers/epochs; about 20 minutes on two CPU cores). See docs/crawl.md.",
    )
    url_model_gold_pairs: str | None = Field(
        None,
        description="A file of gold URL pairs of other sites (WMT16 test.pairs format: tab-separated, the last two "
        "fields the two URLs) added to the URL-pair model's training, e.g. ../shared/eval/wmt16_docalign_test_gold/"
        "test.pairs.",
    )
    url_model_base: str | None = Field(
        None, description="Encoder folder the URL models are fine-tuned from (default: the converted multilingual-e5-small)."
    )
    url_model_layers: int = Field(
        4, ge=0, le=48, description="URL models keep this many bottom encoder layers (0: all); fewer is faster."
    )
    url_model_trained_layers: int = Field(
        2, ge=0, le=48, description="Top kept layers fine-tuned with the head; the embeddings and lower layers stay frozen."
    )
    url_model_epochs: int = Field(2, ge=1, le=100, description="Passes over the URL-model training examples.")
    url_model_max_length: int = Field(64, ge=8, le=512, description="Tokens of a URL (or URL pair) the URL models read.")
    terms_other_language_bonus: float = Field(
        10.0, ge=0, description="terms strategy: the constant c added to links that point to the other language."
    )
    max_pages: int = Field(
        2000,
        ge=1,
        le=100_000_000,
        description="Stop after this many fetched URLs (responses written to WARC); shared among the host "
        "groups in proportion to their seeds.",
    )
    host_groups: int = Field(
        1,
        ge=1,
        le=4096,
        description="Crawl tasks: hosts are grouped by a hash of their registered domain and each "
        "group is crawled by its own task (its own frontier, checkpoints and WARC files); a link to a host of another "
        "group is left to that group (counted as other_host_group). 1: one task crawls every host.",
    )
    max_pages_per_host: int | None = Field(None, ge=1, le=100_000_000, description="Fetch at most this many URLs from one host.")
    max_depth: int = Field(30, ge=0, le=10_000, description="Links further than this from a seed are not followed.")
    time_limit_seconds: float | None = Field(
        None, gt=0, le=2_592_000, description="Stop fetching after this long (resumed runs included)."
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Hosts besides the seeds' whose links are followed ('*': any host)."
    )
    include_paths: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per host ('*': all): only URLs whose path?query matches one regex are followed. "
        "RE2 syntax (linear-time matching): no backreferences or lookaround. At most 1,000 patterns, all hosts together "
        "(as many for exclude_paths).",
    )
    exclude_paths: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per host ('*': all): URLs whose path?query matches a regex are not followed. RE2 syntax, as include_paths.",
    )
    skip_extensions: list[str] = Field(
        default_factory=lambda: (
            "png jpg jpeg gif svg webp ico bmp tif tiff css js mjs json woff woff2 ttf otf eot mp3 mp4 "
            "m4a ogg oga ogv webm avi mov wav flac zip gz tgz bz2 xz 7z rar tar deb rpm iso img exe msi dmg apk bin pdf".split()
        ),
        description="Links to files with these extensions are not fetched (keep it consistent with content_types).",
    )
    content_types: list[str] = Field(
        default_factory=lambda: ["text/html", "application/xhtml+xml", "text/plain"],
        description="2xx responses of other types are refused after the headers (body not read); [] allows "
        "all; a response without Content-Type passes.",
    )
    max_sitemaps_per_host: int = Field(
        100,
        ge=0,
        le=1_000,
        description="Sitemaps read per host (docs/crawl.md): those its robots.txt names, else /sitemap.xml, and the "
        "children of sitemap indexes; their pages enter the frontier ranked like links, their hreflang alternates become "
        "declared language versions. 0 reads none.",
    )
    max_frontier_per_host: int = Field(
        100_000,
        ge=1,
        le=10_000_000,
        description="URLs of one host waiting in the frontier at once; the links and sitemap pages beyond it are "
        "counted (frontier_host_limit), not queued: a host's sitemaps cannot fill the crawl's memory and checkpoints.",
    )
    script_links: bool = Field(
        False,
        description="Also fetch the site's own script files that pages load and follow the URL-looking strings in them "
        "(menus and tables of contents built by JavaScript), speculatively as Heritrix's ExtractorJS; same host only.",
    )
    allow_private_addresses: list[str] = Field(
        default_factory=list,
        description="Addresses or networks, each with an optional port (127.0.0.1:8765, [::1]:8765, 10.0.0.0/8), that "
        "may be fetched although private, loopback, link-local or multicast; all others such are refused. Without a "
        "port every port of the address is allowed (other services on it too).",
    )
    concurrency: int = Field(8, ge=1, le=256, description="Requests in flight at once, all hosts together.")
    per_host_concurrency: int = Field(2, ge=1, le=64, description="Requests in flight at once to one host.")
    delay_seconds: float = Field(1.0, ge=0, le=3600, description="Minimum pause between two requests to one host.")
    max_robots_delay_seconds: float = Field(
        30.0, ge=0, le=3600, description="A robots.txt Crawl-delay above this is capped to it."
    )
    connect_timeout_seconds: float = Field(10.0, gt=0, le=600, description="Time to open a connection.")
    read_timeout_seconds: float = Field(20.0, gt=0, le=3600, description="Longest wait for the next bytes of a response.")
    timeout_seconds: float = Field(60.0, gt=0, le=3600, description="Total time for one request, body included.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries of a URL after a 5xx answer or a timeout.")
    retry_backoff_seconds: float = Field(
        1.0, ge=0, le=600, description="First retry waits this long; each next one twice as long."
    )
    max_redirects: int = Field(5, ge=0, le=30, description="Longest redirect chain followed; loops are detected and dropped.")
    max_body_bytes: int = Field(
        10_000_000, ge=1024, le=MAX_BODY_BYTES, description="Larger responses are truncated (WARC-Truncated: length). "
        "Each fetch in flight buffers up to this much: `concurrency` x `max_body_bytes` may not pass 4,000,000,000.",
    )  # fmt: skip
    scout_pages: int = Field(
        50,
        ge=0,
        le=1_000_000,
        description="Language scouting: a host with no page in the target language after this many "
        "HTML pages is dropped (0: never).",
    )
    user_agent: str = Field(
        "bitextflow/0.1 (+https://github.com/bitextflow/bitextflow)",
        min_length=1,
        description="Sent with every request and matched against robots.txt groups.",
    )
    warc_max_bytes: int = Field(20_000_000, ge=100_000, le=5_000_000_000, description="A WARC shard is closed past this size.")
    checkpoint_every_pages: int = Field(
        200, ge=1, le=1_000_000, description="Frontier and seen-set are saved to S3 after this many pages..."
    )
    checkpoint_every_seconds: float = Field(120.0, gt=0, le=86_400, description="... or after this long, whichever comes first.")

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, strategy: str) -> str:
        if strategy not in ("bfs", "terms", "url-rules", "smart"):
            raise ValueError(f"unknown strategy {strategy!r}; choose bfs, terms, url-rules or smart")
        return strategy

    @field_validator("seeds")
    @classmethod
    def _seeds_unless_warcs(cls, seeds: list[HttpUrl], info: ValidationInfo) -> list[HttpUrl]:
        warcs, index = info.data.get("warcs"), info.data.get("index")  # declared before seeds, so validated first
        if warcs and index:
            raise ValueError("crawl.warcs and crawl.index are both set; a run reads one source: remove one of them")
        if not seeds and not warcs and not index:
            raise ValueError(
                "give at least one seed URL to crawl, crawl.warcs (existing WARC files to ingest) or crawl.index "
                "(a Common Crawl index to select sites from)"
            )
        if seeds and warcs:
            raise ValueError("crawl.warcs is set too; to ingest WARCs without crawling set crawl.seeds to []")
        if seeds and index:
            raise ValueError("crawl.index is set too; to select from the index without crawling set crawl.seeds to []")
        return seeds

    @model_validator(mode="after")
    def _crawl_log_for_url_models(self) -> CrawlConfig:
        if self.index is not None and self.train_url_models:
            raise ValueError(
                "crawl.train_url_models learns from a crawl's log, which a run from crawl.index has not: turn it off"
            )
        return self

    @field_validator("include_paths", "exclude_paths")
    @classmethod
    def _valid_patterns(cls, patterns: dict[str, list[str]], info: ValidationInfo) -> dict[str, list[str]]:
        total = sum(len(regexes) for regexes in patterns.values())
        if total > MAX_PATH_PATTERNS:  # each is matched against every link, in the crawl's event loop
            raise ValueError(
                f"{total:,} patterns; at most {MAX_PATH_PATTERNS:,} in {info.field_name}: join alternatives into one regex (a|b)"
            )
        for host, regexes in patterns.items():
            for regex in regexes:
                try:
                    path_pattern(regex)
                except ValueError as exc:
                    raise ValueError(f"host {host!r}: {exc}") from None
        return patterns

    @model_validator(mode="after")
    def _bounded_buffers(self) -> CrawlConfig:
        if self.concurrency * self.max_body_bytes > MAX_BUFFERED_BYTES:
            raise ValueError(
                f"concurrency {self.concurrency} x max_body_bytes {self.max_body_bytes} may buffer more than "
                f"{MAX_BUFFERED_BYTES:,} bytes at once; lower one of them"
            )
        return self

    @field_validator("allow_private_addresses")
    @classmethod
    def _valid_networks(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            allowed_address(entry)
        return entries


#: The robots.txt user agents whose rules a corpus honours by default, and why each (docs/publishing.md lists them).
#: A rule for any of them is read as the site's wish to stay out of web corpora and AI training data.
DEFAULT_ROBOTS_AGENTS: dict[str, str] = {
    "*": "the rules for every crawler: a site that turns all crawlers away turns a corpus away too (HPLT v3 honours it)",
    "CCBot": "Common Crawl's crawler: its archives feed most web corpora, and sites refuse it to stay out of them (HPLT v3)",
    "ia_archiver": "the Internet Archive's (formerly Alexa's) crawler, honoured by HPLT v3 for crawls that ignored robots.txt",
    "GPTBot": "OpenAI's crawler for the training data of its models",
    "Google-Extended": "Google's token for training Gemini models (not a crawler: a rule for it is an AI-training opt-out)",
    "Applebot-Extended": "Apple's token for training its foundation models (not a crawler: an AI-training opt-out)",
    "ClaudeBot": "Anthropic's crawler for the training data of its models",
    "anthropic-ai": "Anthropic's earlier token, still in many robots.txt files",
    "cohere-ai": "Cohere's token for model training",
    "cohere-training-data-crawler": "Cohere's crawler for training data",
    "meta-externalagent": "Meta's crawler for training AI models",
    "FacebookBot": "Meta's earlier crawler for training speech and language models",
    "Bytespider": "ByteDance's crawler for training its language models",
    "PerplexityBot": "Perplexity's crawler for its AI answer engine",
    "Amazonbot": "Amazon's crawler, whose data may train Amazon's AI models",
    "Diffbot": "Diffbot's crawler, whose knowledge graph and data sets are sold for AI training",
    "Ai2Bot-Dolma": "the Allen Institute's crawler for Dolma, an open training corpus built as ours is",
    "omgili": "Webz.io's crawler, whose data sets are sold for AI training",
}
_ROBOTS_AGENT = re.compile(r"^[A-Za-z0-9_.*-]+$")


class PolicyConfig(_Section):
    """What a corpus that may be published honours and leaves out (docs/publishing.md): the site owners' opt-outs, on
    the crawl and on ingest, and pages that say they were machine translated."""

    robots_agents: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ROBOTS_AGENTS),
        description="robots.txt user agents whose rules every page must pass, crawled or ingested, besides "
        "crawl.user_agent: a page that one of them may not fetch is set aside (counted as optout_robots). Default: `*` "
        "and the agents of AI-training crawlers, each with its reason in docs/publishing.md; [] honours the rules for "
        "crawl.user_agent only.",
    )
    honour_tdmrep: bool = Field(
        True,
        description="Honour TDMRep (W3C community group report, the EU DSM Directive's article 4 opt-out): a page reserved "
        'by the site\'s /.well-known/tdmrep.json, a `tdm-reservation: 1` header or `<meta name="tdm-reservation" '
        'content="1">` is set aside (optout_tdmrep).',
    )
    honour_noai: bool = Field(
        True,
        description="A page whose X-Robots-Tag header or robots `<meta>` (named robots or after one of robots_agents) "
        "says `noai` is set aside (optout_noai). `noimageai` reserves a page's images, which no release holds.",
    )
    unknown_robots_on_ingest: Literal["fetch", "allow", "disallow"] = Field(
        "fetch",
        description="An ingested page whose site's robots.txt is not captured in its WARC file nor in policy.robots_warcs "
        "(in a run from crawl.index: in the index's robotstxt captures): `fetch` it once per site through the crawler's "
        "guarded fetcher (crawl.user_agent, its timeouts and address guard; cached in the run, with "
        "/.well-known/tdmrep.json), or, offline, take no robots.txt as `allow` (RFC 9309's answer for a site without "
        "one) or `disallow` (keep only pages known to be allowed).",
    )
    robots_warcs: WarcLocations = Field(
        default_factory=list,
        description="WARC files holding the robots.txt (and /.well-known/tdmrep.json) captures of the crawl whose WARC "
        "files crawl.warcs ingests, such as Common Crawl's `robotstxt` files of the same crawl; locations as in "
        "crawl.warcs (their buckets in crawl.warc_buckets). Captures inside the ingested files themselves are always used.",
    )
    align_machine_translated: bool = Field(
        False,
        description="Align pages whose markup says they were machine translated (an `x-mtfrom` language tag, a "
        "translation plugin or proxy; docs/publishing.md lists the signals). Off: they are set aside at extraction "
        "(counted as machine_translated, kept in the rejected documents with the signal that flagged them).",
    )

    @field_validator("robots_agents")
    @classmethod
    def _valid_agents(cls, agents: list[str]) -> list[str]:
        for agent in agents:
            if not _ROBOTS_AGENT.match(agent):
                raise ValueError(f"{agent!r} is not a robots.txt user agent token (letters, digits, _ . - or *), e.g. GPTBot")
        return agents


def allowed_address(entry: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, int | None]:
    """An entry of ``crawl.allow_private_addresses``: a network and, where one is given, the only port allowed.

    ``127.0.0.1:8765``, ``[::1]:8765`` and ``10.0.0.0/8:443`` allow one port; ``127.0.0.1`` or ``10.0.0.0/8``
    every port, so a page could also reach other services on those addresses (an Airflow API on 8080).
    """
    network, port = entry.strip(), None
    bracketed = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?", network)
    if bracketed:
        network, port = bracketed.group(1), bracketed.group(2)
    elif network.count(":") == 1:  # IPv4 with a port; a bare IPv6 address has several colons
        network, port = network.split(":")
    try:
        parsed = ipaddress.ip_network(network, strict=False)
        number = int(port) if port is not None else None
        if number is not None and not 0 < number < 65536:
            raise ValueError(number)
    except ValueError:
        raise ValueError(
            f"{entry!r} is not an IP address or network with an optional port (e.g. 127.0.0.1:8765, [::1]:8765, 10.0.0.0/8)"
        ) from None
    return parsed, number


class ExtractConfig(_Section):
    site_partitions: int = Field(
        16, ge=1, le=4096, description="Site partitions P: documents and sentences are written partitioned by web site "
        "(registered domain hashed into P), and document alignment, sentence alignment, scoring and classification map "
        "over the partitions that hold documents, one task each. Size it so that a partition holds what one task can "
        "align (docs/scaling.md); a run of one site has one partition whatever P is.",
    )  # fmt: skip
    max_tasks: int = Field(
        256, ge=1, le=100_000, description="Most extract tasks of a run: WARC files are grouped into at most this many batches, "
        "one task each (a run over 50,000 WARC files stays under Airflow's `max_map_length`, 1,024 by default).",
    )  # fmt: skip
    min_sentence_tokens: int = Field(
        6, ge=1, le=1000, description="Sentences with fewer tokens (whitespace tokens; ICU words for zh, ja, th) are dropped "
        "(counted); 6 as in the MaCoCu DSI paper."
    )  # fmt: skip
    max_sentence_tokens: int = Field(
        50, ge=1, le=1000, description="Sentences with more tokens (whitespace tokens; ICU words for zh, ja, th) are dropped "
        "(counted); 50 as in the MaCoCu DSI paper."
    )  # fmt: skip
    require_end_punctuation: bool = Field(
        False, description="Drop sentences that do not end in punctuation (DSI filter; drops headings and list items)."
    )
    language_identifier: Literal["heliport", "cld2"] = Field(
        "heliport", description="Who identifies a paragraph's and a sentence's language first: `heliport` (220 languages; "
        "GPLv3, so its command line runs in an environment of its own, `.venv-heliport`, which `bitextflow-local prepare` "
        "builds) where it is sure, then CLD2 and fastText lid.176 as with `cld2`, which uses those two alone "
        "(docs/extract.md; bench/lid.py measures them).",
    )  # fmt: skip
    normalise_punctuation: bool = Field(True, description="Moses-style punctuation normalisation of sentences (sacremoses).")
    plain_text: bool = Field(
        False, description="Also make documents of text/plain responses (blank-line separated paragraphs); off by default "
        "because sites mostly serve plain-text dumps of their HTML pages, which would make those near-duplicates.",
    )  # fmt: skip
    extraction_focus: str = Field(
        "recall", pattern=r"^(balanced|precision|recall)$",
        description="trafilatura's main-content trade-off: `recall`, `precision` or `balanced` (default chosen by "
        "cross-validation, docs/benchmarks.md).",
    )  # fmt: skip
    max_link_density: float | None = Field(
        0.7, ge=0, le=1, description="A main-content paragraph whose block in the page has a larger share of its "
        "text inside links (\"Related: ...\", teaser lists) is flagged boilerplate; `null`: off.",
    )  # fmt: skip
    max_page_bytes: int = Field(
        1_000_000,
        ge=10_000,
        le=50_000_000,
        description="HTML payloads are cut to this many bytes before parsing (counted repair).",
    )
    near_duplicate_threshold: float = Field(
        0.8, gt=0, le=1, description="Shared main paragraphs / paragraphs of the shorter document above which two "
        "documents of one language are near-duplicates (ILSP-FC); the longer is kept.",
    )  # fmt: skip
    export_formats: list[Literal["xml", "jsonl"]] = Field(
        default_factory=list, description="Also write each shard's kept documents for reading, ILSP-FC style, under "
        "extract/export/<shard>/: `xml` (one cesDoc file per document, paragraphs with type, crawlinfo, lang, topic) "
        "and/or `jsonl` (documents.jsonl.gz). Off by default.",
    )  # fmt: skip
    lsh_threshold: float = Field(
        0.8, ge=0.1, le=0.95, description="Across the shards of a run, documents of one language whose estimated Jaccard "
        "similarity (MinHash of 5-letter shingles) reaches this are near-duplicates; the longer is kept.",
    )  # fmt: skip
    lsh_num_perm: int = Field(
        128, ge=16, le=1024, description="MinHash permutations of the cross-shard near-duplicate search (more: "
        "a finer similarity estimate, slower).",
    )  # fmt: skip
    duplicate_sentences: str = Field(
        "flag", pattern=r"^(flag|drop)$", description="A sentence seen before in the shard in the same language (letters only): flagged in the "
        "`duplicate` column (alignment needs each document whole) or dropped (counted).",
    )  # fmt: skip


class AlignConfig(_Section):
    min_alignment_score: float = Field(0.1, ge=0, le=1, description="Sentence pairs scoring lower are dropped.")
    document_pairs_per_shard: int = Field(25, ge=1, le=100_000, description="Document pairs per sentence-alignment task.")
    sentence_aligner: Literal["gale-church", "hunalign", "vecalign", "hybrid", "hybrid-e5"] = Field(
        "gale-church",
        description="Sentence aligner: `gale-church` (length only), `hunalign` (bilingual dictionary from "
        "Debian + length; a pair without a dictionary package aligns by length and identical words), "
        "`vecalign` (multilingual sentence embeddings; slowest on CPU), `hybrid` (static embeddings "
        "distilled from the encoder + the `hunalign` dictionary + length in Vecalign's search; fast on CPU) or "
        "`hybrid-e5` (the same search over the encoder's sentence vectors: the most accurate, strict F1 0.919 "
        "leave-one-file-out on Bleualign; about 5 sentence pairs a second on 2 CPU cores, for a GPU). See docs/align.md.",
    )
    sentence_blocks: bool = Field(
        True,
        description="Sentence alignment respects the pages' blocks (paragraphs, list items, cells, headings): "
        "where the two pages' blocks correspond it aligns sentences inside corresponding blocks only, elsewhere a bead "
        "crossing a block on one side only costs as much as an unaligned sentence. `false`: one search over each "
        "document's sentences, blind to blocks. See docs/align.md.",
    )
    encoder_model: str | None = Field(
        None,
        description="Model folder for `vecalign` and `hybrid-e5` (any transformers encoder); default: the converted multilingual-e5-small.",
    )
    static_model: str | None = Field(
        None, description="Static embedding folder for `hybrid`; default: the one distilled from multilingual-e5-small at setup."
    )
    document_methods: list[Literal["url_tokens", "tfidf", "embeddings", "structure", "images"]] = Field(
        default_factory=lambda: ["url_tokens", "tfidf", "structure", "images"], min_length=1,
        description="Document-alignment methods in priority order; a final 1-1 pairing per site takes their pairs method by "
        "method, best score first: `url_tokens` (URLs equal without language markers), `tfidf` (TF-IDF cosine after "
        "word-for-word translation with the pair's dictionary), `embeddings` (mean multilingual sentence embeddings; "
        "slow on CPU), `structure` (ILSP-FC fingerprints, classifier trained on the run's URL pairs), `images` "
        "(ILSP-FC critical images). See docs/align.md.",
    )  # fmt: skip
    document_margins: dict[Literal["tfidf", "embeddings", "structure", "images"], float] = Field(
        default_factory=dict,
        description="Margin a content method's document pair needs over the runner-up of each of its two pages, e.g. "
        "{tfidf: 0.05, structure: 0.1}; a method not named has none. Leave-one-site-out cross-validation over budgeted "
        "crawls chose none once the text methods must agree on partial crawls (docs/align.md, Partial crawls).",
    )
    partial_crawl_agreement: bool = Field(
        True,
        description="On a site the crawl left partial (URLs it knew but did not fetch), a content pair must be the mutual "
        "best match of every text method that ran (tfidf, embeddings, structure): a page whose counterpart was not "
        "crawled has look-alikes that each method ranks differently. Chosen by leave-one-site-out cross-validation "
        "over budgeted crawls (docs/align.md, Partial crawls).",
    )
    document_candidates: int = Field(
        10, ge=1, le=1000, description="Candidate counterparts per document and method (top-k per site)."
    )
    min_tfidf_score: float = Field(0.2, ge=0, le=1, description="Lowest TF-IDF cosine of a `tfidf` document pair.")
    min_embedding_score: float = Field(
        0.3, ge=0, le=1, description="Lowest cosine of an `embeddings` document pair (embeddings centred per language)."
    )
    min_structure_score: float = Field(
        0.5, ge=0, le=1, description="Lowest `structure` score (classifier probability, or 1 - fingerprint edit distance)."
    )
    min_image_jaccard: float = Field(0.5, ge=0, le=1, description="Lowest Jaccard index of critical images of an `images` pair.")


class EmbedConfig(_Section):
    """How a run embeds its sentences: once, for every stage that uses sentence vectors (docs/architecture.md)."""

    shared: bool = Field(
        True, description="`true`: the `embed` stage embeds every sentence the aligner sees once, and the encoder "
        "aligners, the margin scorer and a probe domain classifier share those vectors; `false`: each of them embeds what "
        "it uses itself (slower: the path before the embed stage, kept for comparison).",
    )  # fmt: skip
    runtime: Literal["auto", "torch", "onnx-int8"] = Field(
        "auto", description="What runs the encoder: `torch` (bfloat16 on a GPU or a CPU that has it natively, else "
        "float32), `onnx-int8` (ONNX Runtime, int8 matrix products, CPU only: the fastest on CPUs without AMX) or `auto` "
        "(torch on a GPU or a CPU with AMX, onnx-int8 elsewhere). Vectors of the two agree to a cosine of 0.99 on average; "
        "docs/benchmarks.md has the speeds.",
    )  # fmt: skip
    cache: bool = Field(
        True, description="`true`: look each sentence up in this machine's embedding cache first and encode only the "
        "rest, keeping what it encodes (`$BITEXTFLOW_EMBEDDING_CACHE`, else `<cache>/embeddings`, on a local disk): runs "
        "over unchanged pages, backfills and the pairs that share a language embed a sentence once. A cached int8 "
        "vector was made in another batch and may differ from a fresh one by a cosine of about 0.001 "
        "(docs/architecture.md); `false` encodes every sentence of the run.",
    )  # fmt: skip
    cache_max_gb: float = Field(
        4.0, gt=0, description="The embedding cache's size per encoder, in GB (840 bytes a sentence of "
        "multilingual-e5-small: about 4.7 million sentences in 4 GB); past it the oldest vectors go first.",
    )  # fmt: skip


class ScoreConfig(_Section):
    max_length_ratio: float = Field(
        2.5,
        ge=1,
        description="Longer side / shorter side, in Latin-character equivalents (a Chinese character counts "
        "3.6, kana 1.7, Hangul 2.4: docs/score.md).",
    )
    min_characters: int = Field(3, ge=1, description="Each side needs at least this many Latin-character equivalents.")
    use_bicleaner: Literal["yes", "if-installed", "no"] = Field(
        "no",
        description="Also fix, tag and score pairs with bifixer, bicleaner-hardrules and bicleaner-ai in their own environment "
        "(docs/score.md): `yes` fails with the missing path when the environment or model is absent, `if-installed` then "
        "falls back to the hard rules only; decided when the DAG is parsed.",
    )  # fmt: skip
    bicleaner_model: str = Field(
        "default", description="bicleaner-ai model folder, or `default` for the one `make setup` trains for the pair."
    )
    bicleaner_threshold: float = Field(
        0.5, ge=0, le=1, description="Pairs with a lower bicleaner-ai score are dropped (counted)."
    )
    bicleaner_image: str = Field(
        "", description="Image of the bicleaner step when gpu.mode is kubernetes (docker/bicleaner.Dockerfile)."
    )
    pair_scorer: Literal["none", "margin"] = Field(
        "margin",
        description="`margin`: score every pair 0..1 by the ratio margin of its sentence embeddings (the encoder of "
        "`align.encoder_model`, multilingual-e5-small by default) against the nearest sentences of its shard, calibrated "
        "offline for each encoder runtime (docs/score.md), into `margin_score`; pairs under `margin_threshold` are dropped "
        "(counted). Works offline, on the vectors of the run's `embed` stage. `none`: the hard rules only, no encoder.",
    )  # fmt: skip
    margin_threshold: float | None = Field(
        None, ge=0, le=1, description="Pairs with a lower calibrated margin score are dropped (counted); empty: the "
        "threshold chosen by cross-validation with the calibration of the runtime that made the vectors (multilingual-e5-small: "
        "0.53 torch, 0.62 onnx-int8; docs/score.md).",
    )  # fmt: skip


class DomainTrainingConfig(_Section):
    """Training of the domain classifier (docs/classify.md): data, model kind and fine-tuning settings."""

    kind: Literal["svm", "transformer", "probe"] = Field(
        "transformer", description="`svm`: tf-idf unigrams+bigrams with a calibrated linear SVM (the DSI baseline); "
        "`transformer`: fine-tune `base_model` with a classification head and temperature scaling; `probe`: a "
        "multinomial logistic regression on the frozen `base_model` encoder's sentence embeddings (C by site-grouped "
        "cross-validation, temperature on dev): about a minute on 2 CPU cores, and it transfers zero-shot to other languages.",
    )  # fmt: skip
    labels: list[str] = Field(
        default_factory=lambda: ["computing", "religion", "legal", "Other"], min_length=2,
        description="Domain labels; any other label in the training data is an error. `Other` (general pages) is down-sampled to half.",
    )  # fmt: skip
    data: str | None = Field(
        None, description="Labelled sentences (JSONL: text, label, site, language), a local path or s3://bucket/key; "
        "empty: the offline set built from Debian packages in the pair's source language.",
    )  # fmt: skip
    crawl_runs: list[str] = Field(
        default_factory=list, description="Run ids of this pair whose extracted sentences (source language) are the training data, "
        "labelled by `site_labels`/`other_sites` (the DSI method); used when `data` is empty.",
    )  # fmt: skip
    site_labels: dict[str, str] = Field(
        default_factory=dict, description="URL prefix -> label for `crawl_runs` sentences; the longest matching prefix wins.",
    )  # fmt: skip
    other_sites: list[str] = Field(
        default_factory=list, description="URL prefixes of general sites whose sentences are `Other`; sentences of unlisted sites are not used (counted).",
    )  # fmt: skip
    zero_shot_data: str | None = Field(
        None, description="Labelled sentences in another language to evaluate zero-shot; empty with `data` empty: the "
        "offline set in the target language (when one exists).",
    )  # fmt: skip
    base_model: str | None = Field(
        None,
        description="Transformers folder to fine-tune (`probe`: the frozen encoder); empty: the converted multilingual-e5-small.",
    )
    max_per_class: int = Field(
        2000,
        ge=10,
        le=1_000_000,
        description="Training sentences per label after down-sampling (Other: half); dev and test in proportion.",
    )
    dev_share: float = Field(0.1, gt=0, lt=0.5, description="Share of each label's sentences (whole sites) for dev, after train.")
    test_share: float = Field(
        0.1, gt=0, lt=0.5, description="Share of each label's sentences (whole sites) for test, at the end."
    )
    min_count: int = Field(5, ge=1, description="svm: n-grams in fewer training sentences are ignored.")
    svm_c: float = Field(1.0, gt=0, description="svm: regularisation constant C of the linear SVM.")
    max_length: int = Field(64, ge=8, le=512, description="transformer: tokens per sentence (longer ones are truncated).")
    epochs: float = Field(1.0, gt=0, le=100, description="transformer: passes over the training sentences.")
    max_steps: int | None = Field(
        200,
        ge=1,
        le=1_000_000,
        description="transformer: stop after this many batches (keeps CPU training to minutes); empty: no cap.",
    )
    batch_size: int = Field(16, ge=1, le=4096, description="transformer: sentences per batch.")
    learning_rate: float = Field(
        1e-4,
        gt=0,
        description="transformer: AdamW peak learning rate (linear warm-up and decay); high because CPU runs take few steps.",
    )
    trainable_layers: int | None = Field(
        None, ge=0, le=48, description="transformer: fine-tune only the top N encoder layers (and the head); empty: all. "
        "Word embeddings are always frozen (zero-shot languages keep their vectors). 2-4 makes CPU training several times cheaper.",
    )  # fmt: skip
    seed: int = Field(0, description="Seed of down-sampling, batch order and head initialisation.")
    min_test_macro_f1: float = Field(
        0.5, ge=0, le=1, description="A trained model is published only with at least this test macro F1, and not below "
        "the newest published version's on the same test sentences (else the task fails, naming both; the model folder "
        "stays). Only the pair's YAML may set it.",
    )  # fmt: skip


class DomainConfig(_Section):
    name: str = Field(min_length=1, description="Name of the domain the corpus is about.")
    terms: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Per language of the pair: term -> weight (positive). A key may be any tag of the language (spa, "
        "es-ES, zh-Hant); one of no language of the pair is refused.",
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
    stem_terms: bool = Field(
        True,
        description="Match terms after Snowball stemming (PyStemmer) where the language has one, in pages, sentences and "
        "the crawler's links alike.",
    )
    classifier: str | None = Field(
        None, description="Domain classifier applied at classify: a model folder, s3://bucket/prefix, `latest` (the pair's "
        "newest under models/<pair>/domain/) or `offline` (a probe trained on the offline Debian set of the source "
        "language, en or es, on first use or by `bitextflow-local prepare`, and cached under $BITEXTFLOW_CACHE/models/domain/offline/; "
        "no object store or training DAG needed); empty: term relevance only. Train one with `bitextflow train-domain`.",
    )  # fmt: skip
    classifier_label: str | None = Field(
        None, description="Label whose probability is thresholded; empty: domain.name (must then be one of the model's labels)."
    )
    classifier_threshold: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Pairs where neither side's probability of classifier_label reaches this are dropped (0: keep all).",
    )
    training: DomainTrainingConfig | None = Field(
        None,
        description="How to train the pair's domain classifier; set it to get the training DAG bitextflow__<pair>__train_domain.",
    )

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
    max_length_ratio: float = Field(
        3.0, ge=1, description="Any pair with a larger length ratio (Latin-character equivalents) fails it."
    )
    max_duplicate_share: float = Field(0.05, ge=0, le=1, description="Share of repeated pairs allowed.")
    max_other_language_share: float = Field(
        0.1, ge=0, le=1, description="Share of one side's sentences that CLD2 is sure are in another language allowed."
    )
    min_documents: int = Field(1, ge=0, description="Fewer kept documents after extraction fail the documents gate.")
    min_document_pairs: int = Field(1, ge=0, description="A run with fewer document pairs fails the sentence-pairs gate.")
    max_volume_drop: float | None = Field(
        0.5, ge=0, le=1,
        description="Fail when the release has this share fewer pairs than the pair's previous release (null: no check).",
    )  # fmt: skip
    max_volume_growth: float | None = Field(
        None, ge=0,
        description="Fail when the release grows by more than this share over the previous one (e.g. 4: five times as many).",
    )  # fmt: skip


class PersonalDataConfig(_Section):
    """Personal data in the released text: found in the gate (sentence pairs) and the release (monolingual corpus),
    then replaced or set aside (docs/publishing.md)."""

    types: list[Literal["email", "phone", "ip", "iban", "card"]] = Field(
        ["email", "phone", "ip", "iban", "card"],
        description="What to look for: email addresses, phone numbers, IP addresses, IBANs, payment card numbers "
        "(each checked against its standard: checksums, numbering plans); empty: none (the release says so).",
    )
    action: Literal["replace", "drop"] = Field(
        "replace", description="`replace`: each value becomes a typed placeholder (`[EMAIL_1]`), the same value the "
        "same placeholder on both sides of a pair; `drop`: the pair (or monolingual sentence) is set aside, counted.",
    )  # fmt: skip
    phone_regions: list[Annotated[str, Field(pattern=r"^[A-Z]{2}$")]] = Field(
        default_factory=list,
        description="Regions (ISO 3166-1 alpha-2) whose national phone formats count, besides the likely region of each "
        "of the pair's languages (CLDR: en US, es ES, fr FR, de DE); numbers in international format count everywhere.",
    )


class MonolingualConfig(_Section):
    """The monolingual corpus as documents (docs/release.md, "Monolingual documents"): every document extraction kept
    in one of the pair's languages is annotated; the release's ``documents.<lang>.jsonl.gz`` holds those that pass the
    thresholds below, each with its annotations, so that users can filter again without running anything."""

    enabled: bool = Field(True, description="Annotate the documents and release them; false: no `documents.*` files.")
    quality_labels: list[Literal["PT", "RTE", "PRT", "NRT", "WLN"]] = Field(
        ["PT", "RTE", "PRT"],
        description="Document text-quality labels released (MaCoCu scheme: PT publishable running text, RTE running text "
        "with errors, PRT partially running text, NRT not running text, WLN wrong or no language; docs/text-quality.md). "
        "The default keeps documentation pages, whose commands and lists make them partly running text; [PT, RTE] keeps "
        "running text only.",
    )
    min_quality_score: float = Field(
        0.0, ge=0, le=1, description="Lowest document quality score released (0..1, the likelihood of running text)."
    )
    min_language_score: float = Field(
        0.5, ge=0, le=1, description="Lowest share of the document's text in its language (the identifier's language set)."
    )
    min_relevance: float = Field(0.0, ge=0, description="Lowest domain relevance released (extraction's ILSP-FC score).")
    classifier_sentences: int = Field(
        8, ge=0, description="With `domain.classifier`: a document no classified sentence pair came from (a page "
        "without a translation, or whose pairs were all filtered) gets the mean distribution of at most this many of "
        "its sentences, spread evenly over the page (each one classifier pass, e.g. an embedding for a probe); 0: its "
        "`domain.classifier` stays null.",
    )  # fmt: skip
    min_words: int = Field(20, ge=0, description="Fewer words in the document's main content: not released.")
    duplicates: Literal["drop", "keep"] = Field(
        "drop", description="Documents the run set aside as copies of another (same URL, text or near-duplicate): "
        "`drop` releases the one kept, with its cluster's size; `keep` releases the copies too, but a copy of the same "
        "URL only once: it is the same document, under the same id.",
    )  # fmt: skip


class StorageConfig(_Section):
    bucket: str = Field("bitextflow", min_length=3, max_length=63, pattern=r"^[a-z0-9][a-z0-9.-]+[a-z0-9]$")


class ReleaseConfig(_Section):
    """Where releases are recorded besides S3: the DVC data registry (docs/release.md)."""

    record_in_registry: bool = Field(
        True, description="Record each release in the DVC data registry (`dvc add`, `dvc push`, git tag "
        "`<namespace>/<pair>-v<N>`); "
        "false: publish to S3 only.",
    )  # fmt: skip
    registry: str | None = Field(
        None, description="The registry, a git repository: a local path (created when missing) or a git URL (cloned, "
        "updated and pushed with its tags); empty: $BITEXTFLOW_REGISTRY, else `.local/registry` in the project home.",
    )  # fmt: skip
    dvc_remote: str | None = Field(
        None, pattern=r"^s3://", description="S3 URL the registry's DVC remote stores data in (same endpoint and "
        "credentials as storage); empty: `s3://<storage.bucket>/dvc`.",
    )  # fmt: skip
    namespace: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Prefix of this deployment's tags and paths in "
        "the registry (`<namespace>/<pair>-v<N>`, `<namespace>/releases/<pair>/v<N>`), so that deployments sharing "
        "a registry never take each other's tags; empty: the storage bucket.",
    )  # fmt: skip


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
        default_factory=dict, description='Node labels the pod must land on, e.g. `{nvidia.com/gpu.present: "true"}`.'
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
    config_file: str | None = Field(
        None, description="Path of a kubeconfig file on the Airflow worker (instead of the connection's)."
    )
    service_account: str | None = Field(
        None, pattern=_DNS_LABEL, description="Service account the pod runs as; empty: the namespace default."
    )

    @model_validator(mode="after")
    def _image_when_kubernetes(self) -> GpuDispatchConfig:
        if self.mode == "kubernetes" and not self.image:
            raise ValueError("mode kubernetes needs gpu.image (build docker/gpu-worker.Dockerfile and push it)")
        return self


#: Options a run's overrides may not change: what the workers' credentials, files and network trust. A
#: triggerer could otherwise turn the address guard off (crawl.allow_private_addresses), push releases or
#: models to a remote of their choice (storage, release), read other buckets with the workers' credentials
#: (crawl.warcs, warc_buckets, the index's table and WARC root), make a worker load a model folder of their choice
#: (the model options) or publish personal data (personal_data). The opt-outs a corpus honours (policy) are the
#: deployment's promise to the sites it publishes from, not a run's choice.
DEPLOYMENT_ONLY = frozenset({
    "source", "target", "schedule", "storage", "release", "gpu", "personal_data",
    "crawl.warcs", "crawl.warc_buckets", "crawl.index.table", "crawl.index.warc_root", "crawl.allow_private_addresses",
    "crawl.user_agent", "crawl.url_models", "crawl.url_model_base", "crawl.train_url_models", "policy",
    "align.encoder_model", "align.static_model",
    "score.bicleaner_model", "score.bicleaner_image",
    "domain.classifier", "domain.training.data", "domain.training.zero_shot_data", "domain.training.base_model",
    # what the domain classifier learns from and predicts: a run that may set them publishes a model trained on its own
    # labelled site, which every later run with `domain.classifier: latest` loads
    "domain.training.crawl_runs", "domain.training.site_labels", "domain.training.other_sites", "domain.training.labels",
    # what a published model must reach: a run that lowers it publishes any model as the newest
    "domain.training.min_test_macro_f1",
})  # fmt: skip


class PairConfig(_Section):
    source: LanguageCode = Field(
        description="The first language (e.g. en): an ISO 639-1 or 639-3 code or a BCP 47 tag (eng, en-GB), kept as its "
        "ISO 639-1 code where one exists, else its ISO 639-3 code (ce, ckb). CLD2 or heliport must know it; one only "
        "heliport knows needs `extract.language_identifier: heliport`. A script other than the language's usual one, "
        "named or implied by a region (sr-Latn, zh-Hant, zh-TW), is kept after an underscore: sr_Latn, zh_Hant; pages "
        "in the other script are another language's (docs/languages.md).",
    )
    target: LanguageCode = Field(
        description="The second language (e.g. es): as `source` (spa, es-ES, zh-Hans, cmn, zh-TW and heb are es, es, "
        "zh, zh, zh_Hant and he).",
    )
    description: str = Field("", description="Free text shown on the DAG in the Airflow UI.")
    schedule: str | None = Field(
        None, description="Airflow schedule of the pair's DAG (a cron expression or a preset such as @weekly); one is "
        "needed for `airflow backfill create`; empty: runs are triggered by hand. Past intervals never run by themselves.",
    )  # fmt: skip
    incremental: bool = Field(
        False, description="Carry the previous release's sentence pairs over for page pairs whose two pages did not change "
        "(same content hash, same pairing) instead of aligning, scoring and classifying them again; changes are reported.",
    )  # fmt: skip
    crawl: CrawlConfig
    policy: PolicyConfig = PolicyConfig()
    extract: ExtractConfig = ExtractConfig()
    align: AlignConfig = AlignConfig()
    embed: EmbedConfig = EmbedConfig()
    score: ScoreConfig = ScoreConfig()
    domain: DomainConfig
    gate: GateConfig = GateConfig()
    personal_data: PersonalDataConfig = PersonalDataConfig()
    mono: MonolingualConfig = MonolingualConfig()
    storage: StorageConfig = StorageConfig()
    release: ReleaseConfig = ReleaseConfig()
    gpu: GpuDispatchConfig = GpuDispatchConfig()

    @field_validator("schedule")
    @classmethod
    def _valid_schedule(cls, schedule: str | None) -> str | None:
        from croniter import croniter

        presets = {"@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly"}
        if schedule is not None and schedule not in presets and not croniter.is_valid(schedule):
            raise ValueError(f"{schedule!r} is neither a cron expression nor an Airflow preset such as @daily or @weekly")
        return schedule

    @field_validator("source", "target", mode="before")
    @classmethod
    def _known_language(cls, tag: Any) -> Any:
        """A language tag as the project's code (``spa``, ``es-ES``, ``zh-Hans`` -> ``es``, ``es``, ``zh``)."""
        from bitextflow.text.languages import (
            UnsupportedLanguageTag,
            cld2_languages,
            code_of_tag,
            heliport_languages,
            script_identifiable,
        )
        from bitextflow.text.scripts import base_language, bcp47

        if not isinstance(tag, str):
            return tag
        try:
            code = code_of_tag(tag)
        except UnsupportedLanguageTag as error:
            raise ValueError(str(error)) from None
        if base_language(code) not in cld2_languages() | heliport_languages():
            raise ValueError(
                f"unknown language {tag!r}; name one CLD2 or heliport identifies (docs/languages.md lists them) by its "
                "ISO 639-1 or 639-3 code or a BCP 47 tag, e.g. es, spa, es-ES, zh-Hans, ckb"
            )
        if not script_identifiable(code):
            raise ValueError(
                f"{tag!r}: {bcp47(code)} shares its letters with the language's usual script, so no page can be told to "
                "be in it; name the language without a script"
            )
        return code

    @model_validator(mode="after")
    def _identifiable_languages(self) -> PairConfig:
        from bitextflow.text.languages import cld2_languages
        from bitextflow.text.scripts import base_language

        beyond = [code for code in (self.source, self.target) if base_language(code) not in cld2_languages()]
        if beyond and self.extract.language_identifier != "heliport":
            raise ValueError(
                f"{', '.join(beyond)} is identified by heliport only, and extract.language_identifier is "
                f"{self.extract.language_identifier}: set it to heliport"
            )
        return self

    @model_validator(mode="after")
    def _distinct_languages(self) -> PairConfig:
        if self.source == self.target:
            raise ValueError(f"source and target are both {self.source!r}; a pair needs two languages")
        return self

    @model_validator(mode="after")
    def _robots_warcs_with_warcs(self) -> PairConfig:
        if self.policy.robots_warcs and not self.crawl.warcs:
            raise ValueError(
                "policy.robots_warcs serves ingested WARC files; set crawl.warcs too, or remove it (a crawl fetches robots.txt)"
            )
        return self

    @model_validator(mode="after")
    def _terms_of_the_pair(self) -> PairConfig:
        """The domain terms keyed by the pair's codes: a key written as a tag (spa, zh-Hant) is read as one, and a key of
        no language of the pair, whose terms no page would ever be matched with, is refused (after the checks of the
        pair's languages, which say more)."""
        from bitextflow.text.languages import language_of_tag

        terms: dict[str, dict[str, float]] = {}
        for tag, weighted in self.domain.terms.items():
            code = language_of_tag(tag)
            if code not in (self.source, self.target):
                raise ValueError(
                    f"domain.terms names {tag!r}, which is no language of the pair ({self.source}, {self.target}): key "
                    "each language's terms by its code in the pair"
                )
            terms[code] = {**terms.get(code, {}), **weighted}
        self.domain.terms = terms
        return self

    @property
    def pair(self) -> str:
        """The pair's name, e.g. ``en-es``; used in storage keys and release paths."""
        return f"{self.source}-{self.target}"

    @property
    def dag_id(self) -> str:
        return f"bitextflow__{self.source}_{self.target}"

    def with_run_overrides(self, overrides: dict[str, Any] | None) -> PairConfig:
        """:meth:`with_overrides` for the overrides of one run (the DAG's ``overrides`` param, the CLI's
        ``--overrides``), which whoever may trigger a DAG sets: options in :data:`DEPLOYMENT_ONLY` are refused."""
        for name in overrides or {}:
            if any(name == only or name.startswith(f"{only}.") or only.startswith(f"{name}.") for only in DEPLOYMENT_ONLY):
                raise ConfigError(
                    f"override {name!r}: only the pair's YAML may set this (it names storage, models, training data, "
                    "images or addresses the workers trust, the opt-outs the corpus honours or what personal data a "
                    "release may hold); a run may override limits, thresholds, seeds and the strategy"
                )
        return self.with_overrides(overrides)

    def with_overrides(self, overrides: dict[str, Any] | None) -> PairConfig:
        """A copy with ``section.field`` values replaced, re-validated: the operator's own changes (``--set``);
        a run's overrides go through :meth:`with_run_overrides`."""
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


def _bounds(info: Any) -> str:
    """`` Range: 1 to 256.`` for a field with bounds (the docs show every limit a run may set)."""
    import annotated_types

    low = high = None
    for bound in info.metadata:
        if isinstance(bound, annotated_types.Ge | annotated_types.Gt):
            low = (
                f"{'above ' if isinstance(bound, annotated_types.Gt) else ''}{getattr(bound, 'ge', getattr(bound, 'gt', None)):,}"
            )
        if isinstance(bound, annotated_types.Le | annotated_types.Lt):
            high = (
                f"{'below ' if isinstance(bound, annotated_types.Lt) else ''}{getattr(bound, 'le', getattr(bound, 'lt', None)):,}"
            )
    if high is None:
        return ""
    return f" Range: {low or 'any'} to {high}."


def reference_markdown() -> str:
    """docs/configuration.md, generated from the models so the documentation cannot drift."""
    lines = [
        "# Pair configuration reference",
        "",
        "Generated from `include/bitextflow/config.py` (`python -m bitextflow.config > docs/configuration.md`).",
        "A pair config is `include/pairs/<source>-<target>.yaml`; any field can be overridden for one run",
        'with the DAG param `overrides` (`{"section.field": value}`) or `bitextflow ... --set section.field=value`.',
        "",
    ]

    def table(model: type[BaseModel], prefix: str) -> None:
        lines.extend(["| field | type | default | meaning |", "|---|---|---|---|"])
        for name, info in model.model_fields.items():
            annotation = getattr(info.annotation, "__name__", None) or str(info.annotation).replace("typing.", "")
            default = "required" if info.is_required() else f"`{info.get_default(call_default_factory=True)!r}`"
            annotation = annotation.replace(f"{__name__}.", "").replace("|", "\\|")  # `str | None` must not split the table cell
            lines.append(f"| `{prefix}{name}` | {annotation} | {default} | {info.description or ''}{_bounds(info)} |")
        lines.append("")
        for name, info in model.model_fields.items():  # optional sub-sections, e.g. domain.training
            for nested in getattr(info.annotation, "__args__", ()):
                if isinstance(nested, type) and issubclass(nested, _Section):
                    lines.extend([f"### `{prefix}{name}`", ""])
                    table(nested, f"{prefix}{name}.")

    top = {
        n: i
        for n, i in PairConfig.model_fields.items()
        if not (isinstance(i.annotation, type) and issubclass(i.annotation, _Section))
    }
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
