"""``bitextflow``: run any stage, or the whole pipeline, without Airflow; list releases; run local services.

Storage settings come from the environment (see bitextflow.storage); when none are set and the local
services were started (``bitextflow services up``), their generated settings in ``.local/services.env``
are used, so the commands work right after ``make demo``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

from bitextflow import pipeline
from bitextflow.config import PairConfig, load_pair_config
from bitextflow.errors import BitextflowError, ConfigError
from bitextflow.storage import ObjectStore, stage_key

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def project_home() -> Path:
    """Where include/pairs and .local live: $BITEXTFLOW_HOME, the source checkout, or the current dir."""
    if os.environ.get("BITEXTFLOW_HOME"):
        return Path(os.environ["BITEXTFLOW_HOME"])
    return PROJECT_ROOT if (PROJECT_ROOT / "include" / "pairs").is_dir() else Path.cwd()


def load_services_env() -> None:
    """Adopt the local services' settings unless the environment already names an endpoint.

    ``BITEXTFLOW_SERVICES_ENV`` names another settings file; set it empty to never read one (tests do).
    """
    configured = os.environ.get("BITEXTFLOW_SERVICES_ENV")
    if configured == "" or os.environ.get("BITEXTFLOW_S3_ENDPOINT_URL"):
        return
    env_file = Path(configured) if configured else project_home() / ".local" / "services.env"
    if not env_file.is_file():
        return
    for line in env_file.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not name.startswith("#"):
            os.environ.setdefault(name.strip(), value.strip())


def pair_config(args: argparse.Namespace) -> PairConfig:
    pairs_dir = Path(args.pairs_dir or os.environ.get("BITEXTFLOW_PAIRS_DIR") or project_home() / "include" / "pairs")
    config = load_pair_config(pairs_dir / f"{args.pair}.yaml")
    return config.with_overrides(command_overrides(args))


def command_overrides(args: argparse.Namespace) -> dict[str, object]:
    """``--overrides`` (a JSON object, as the DAG's ``overrides`` param), then each ``--set`` on top."""
    overrides: dict[str, object] = {}
    if getattr(args, "overrides", None):
        try:
            loaded = json.loads(args.overrides)
        except ValueError:
            loaded = None
        if not isinstance(loaded, dict):
            raise ConfigError(f"--overrides {args.overrides!r:.80}: expected a JSON object, e.g. '{{\"crawl.max_pages\": 100}}'")
        overrides.update(loaded)
    for item in args.set or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected section.field=value, e.g. crawl.max_pages=100")
        try:
            overrides[name] = json.loads(value)
        except ValueError:  # a bare word is a string: --set domain.name=legal
            overrides[name] = value
    return overrides


def _context(args: argparse.Namespace, run_id: str | None = None) -> pipeline.RunContext:
    config = pair_config(args)
    store = ObjectStore.from_env(config.storage.bucket)
    return pipeline.RunContext(config, store, run_id or args.run_id)


# Where each stage finds its inputs when run alone: (stage folder, pattern of the input files' names).
# Names, not suffixes: a folder also holds side outputs (rejected rows, duplicates, counts, reports).
_SENTENCE_PAIR_SHARD = re.compile(r"^sentpairs-\d+\.parquet$")
STAGE_INPUTS: dict[str, tuple[str, re.Pattern[str]]] = {
    "extract": ("crawl", re.compile(r"\.warc\.gz$")),
    "gate_documents": ("extract", re.compile(r"\.documents\.parquet$")),
    "align_documents": ("extract", re.compile(r"\.documents\.parquet$")),
    "align_sentences": ("align_documents", re.compile(r"^docpairs-\d+\.parquet$")),
    "score": ("align_sentences", _SENTENCE_PAIR_SHARD),
    "classify": ("score", _SENTENCE_PAIR_SHARD),
    "gate": ("classify", _SENTENCE_PAIR_SHARD),
    "release": ("gate", re.compile(r"^sentence_pairs\.parquet$")),
}


def stage_inputs(ctx: pipeline.RunContext, stage: str) -> list[str]:
    folder, name = STAGE_INPUTS[stage]
    prefix = stage_key(ctx.config.pair, ctx.run_id, folder, "")
    keys = [key for key in ctx.store.list_keys(prefix) if "/" not in key[len(prefix) :] and name.search(key[len(prefix) :])]
    if not keys:
        raise BitextflowError(
            f"no {folder} output for run {ctx.run_id!r} of {ctx.config.pair}; run `bitextflow {folder.replace('_', '-')}` first"
        )
    return keys


def _mapped(
    run: Callable[[pipeline.RunContext, str], str], ctx: pipeline.RunContext, keys: Sequence[str], stage: str
) -> list[str]:
    return [run(ctx, key) for key in tqdm(keys, desc=stage, unit="shard", file=sys.stderr)]


def run_stage(ctx: pipeline.RunContext, stage: str, inputs: list[str] | None = None) -> object:
    """Run one stage on its inputs (found in storage when not given); returns its output keys."""
    if stage == "crawl":
        return pipeline.run_crawl(ctx)
    if stage == "train_domain":
        from bitextflow.classify.train import train_domain

        return train_domain(ctx.config, ctx.store, run_id=ctx.run_id).summary()
    keys = inputs if inputs is not None else stage_inputs(ctx, stage)
    mapped = {
        "extract": pipeline.run_extract,
        "align_sentences": pipeline.run_align_sentences,
        "score": pipeline.run_score,
        "classify": pipeline.run_classify,
    }
    if stage in mapped:
        return _mapped(mapped[stage], ctx, keys, stage)
    if stage == "gate_documents":
        return pipeline.run_gate_documents(ctx, keys)
    if stage == "align_documents":
        return pipeline.run_align_documents(ctx, keys)
    if stage == "gate":
        return pipeline.run_gate(ctx, keys)
    return pipeline.run_release(ctx, keys[0])


def cmd_stage(args: argparse.Namespace) -> int:
    outputs = run_stage(_context(args), args.stage)
    print(json.dumps(outputs, indent=2))
    return 0


def cmd_train_domain(args: argparse.Namespace) -> int:
    from bitextflow.classify.train import train_domain, with_training

    ctx = _context(args, args.run_id or "cli__" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S"))
    config = with_training(ctx.config, kind=args.kind, data=args.data)
    trained = train_domain(config, ctx.store, out_dir=args.out, publish=not args.no_publish, run_id=ctx.run_id)
    print(json.dumps(trained.summary(), indent=2))
    return 0


def cmd_train_url_models(args: argparse.Namespace) -> int:
    ctx = _context(args)
    document_pairs = stage_inputs(ctx, "align_sentences")
    print(pipeline.run_train_url_models(ctx, document_pairs))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    run_id = args.run_id or "cli__" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    ctx = _context(args, run_id)
    outputs: object = None
    for stage in pipeline.STAGES:
        outputs = run_stage(ctx, stage, None if stage == "crawl" else _as_list(outputs))
    print(json.dumps(outputs, indent=2))
    return 0


def _as_list(outputs: object) -> list[str]:
    return list(outputs) if isinstance(outputs, list) else [str(outputs)]


def cmd_releases_list(args: argparse.Namespace) -> int:
    from bitextflow.release import list_releases

    config = pair_config(args)
    releases = [info.to_dict() for info in list_releases(ObjectStore.from_env(config.storage.bucket), config.pair)]
    if args.json:
        print(json.dumps(releases, indent=2))
    else:
        for info in releases:
            print(f"v{info['version']:<4} {info['created']}  {info['sentence_pairs']:>8} pairs  {info['uri']}")
    return 0


def cmd_releases_build(args: argparse.Namespace) -> int:
    """Rebuild a run's release files locally from its stage outputs (what `dvc repro` runs)."""
    from bitextflow.release import build_release, next_version

    ctx = _context(args)
    version, _ = next_version(ctx.store, ctx.config.pair, ctx.run_id)
    inputs = pipeline.release_inputs(ctx, stage_inputs(ctx, "release")[0])
    paths = build_release(Path(args.out), ctx.config.pair, version, *inputs)
    print(json.dumps({"version": version, "files": [str(p) for p in paths]}, indent=2))
    return 0


def cmd_releases_record(args: argparse.Namespace) -> int:
    """Record a published release in the DVC registry (a retry, or a release published without it)."""
    from bitextflow.release import list_releases
    from bitextflow.release.registry import registry_for

    config = pair_config(args)
    store = ObjectStore.from_env(config.storage.bucket)
    releases = {info.version: info for info in list_releases(store, config.pair)}
    if not releases:
        raise BitextflowError(f"{config.pair} has no release yet; run its DAG (or `bitextflow run --pair {config.pair}`) first")
    version = args.version or max(releases)
    if version not in releases:
        raise BitextflowError(f"{config.pair} has no release v{version}; see `bitextflow releases list --pair {config.pair}`")
    entry = registry_for(config, store.settings).record(store, releases[version])
    print(json.dumps({**entry.to_dict(), "get": entry.get_command}, indent=2))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from bitextflow.config import discover_pair_configs
    from bitextflow.release.registry import registry_for
    from bitextflow.release.status import format_status, pair_status

    pairs_dir = Path(args.pairs_dir or os.environ.get("BITEXTFLOW_PAIRS_DIR") or project_home() / "include" / "pairs")
    statuses = []
    for path in discover_pair_configs(pairs_dir):
        config = load_pair_config(path)
        store = ObjectStore.from_env(config.storage.bucket)
        tags = registry_for(config, store.settings).tags() if config.release.record_in_registry else None
        statuses.append(pair_status(store, config, tags))
    print(json.dumps(statuses, indent=2) if args.json else format_status(statuses))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    for path in args.paths:
        config = load_pair_config(path)
        print(f"{path}: ok ({config.dag_id})")
    return 0


def cmd_services(args: argparse.Namespace) -> int:
    from bitextflow.services import stack

    return stack.main(args.action, project_home())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bitextflow",
        description="Build domain-specific parallel corpora from the web. Stages, in order: " + " -> ".join(pipeline.STAGES),
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors (no progress)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def pair_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--pair", required=True, help="language pair, e.g. en-es (include/pairs/<pair>.yaml)")
        p.add_argument("--pairs-dir", help="folder of pair configs (default: include/pairs)")
        p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE", help="override a config option")
        p.add_argument(
            "--overrides", metavar="JSON", help='override options with a JSON object {"section.field": value} (--set wins)'
        )

    for stage in pipeline.STAGES:
        p = sub.add_parser(stage.replace("_", "-"), help=f"run the {stage} stage of one run")
        pair_options(p)
        p.add_argument("--run-id", required=True, help="run whose earlier stage outputs to read")
        p.set_defaults(func=cmd_stage, stage=stage)

    p = sub.add_parser(
        "train-domain", help="train the pair's domain classifier (domain.training) and publish it as models/<pair>/domain/v<N>/"
    )
    pair_options(p)
    p.add_argument("--run-id", help="recorded in the model's metadata (default: cli__<UTC timestamp>)")
    p.add_argument("--kind", choices=["svm", "transformer"], help="model kind (default: domain.training.kind)")
    p.add_argument("--data", help="labelled sentences, JSONL path or s3://bucket/key (default: domain.training.data)")
    p.add_argument("--out", type=Path, help="model folder to write (default: a temporary folder)")
    p.add_argument("--no-publish", action="store_true", help="do not upload the model to the object store")
    p.set_defaults(func=cmd_train_domain, stage="train_domain")

    p = sub.add_parser("train-url-models", help="train the smart strategy's URL models on one run; publish a version")
    pair_options(p)
    p.add_argument("--run-id", required=True, help="run whose crawl log and document pairs to train on")
    p.set_defaults(func=cmd_train_url_models)

    p = sub.add_parser("run", help="run every stage in order, without Airflow")
    pair_options(p)
    p.add_argument("--run-id", help="default: cli__<UTC timestamp>")
    p.set_defaults(func=cmd_run)

    releases = sub.add_parser("releases", help="published corpus versions").add_subparsers(dest="action", required=True)
    p = releases.add_parser("list", help="list the releases of a pair")
    pair_options(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_releases_list)
    p = releases.add_parser("build", help="rebuild a run's release files locally from its stage outputs (dvc repro)")
    pair_options(p)
    p.add_argument("--run-id", required=True, help="run whose gate output to build the release from")
    p.add_argument("--out", required=True, help="folder to write the files into")
    p.set_defaults(func=cmd_releases_build)
    p = releases.add_parser("record", help="record a published release in the DVC registry (tag <pair>-v<N>)")
    pair_options(p)
    p.add_argument("--version", type=int, help="release version (default: the latest)")
    p.set_defaults(func=cmd_releases_record)

    p = sub.add_parser("status", help="state of every pair: last release, last run, counts, failing gates")
    p.add_argument("--pairs-dir", help="folder of pair configs (default: include/pairs)")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per pair")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("validate", help="validate pair config files")
    p.add_argument("paths", nargs="+", type=Path)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("services", help="local S3 (SeaweedFS), site and Airflow for the demo")
    p.add_argument("action", choices=["up", "down", "status"])
    p.set_defaults(func=cmd_services)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("bitextflow").setLevel(logging.WARNING if args.quiet else logging.INFO)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    load_services_env()
    try:
        return args.func(args)
    except BitextflowError as exc:
        print(f"bitextflow: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
