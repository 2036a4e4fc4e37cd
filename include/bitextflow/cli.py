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


# Where each stage finds its inputs when run alone: (stage folder, suffix, excluded suffix).
STAGE_INPUTS: dict[str, tuple[str, str, str | None]] = {
    "extract": ("crawl", ".warc.gz", None),
    "align_documents": ("extract", ".documents.parquet", None),
    "align_sentences": ("align_documents", ".parquet", None),
    "score": ("align_sentences", ".parquet", None),
    "classify": ("score", ".parquet", ".rejected.parquet"),
    "gate": ("classify", ".parquet", None),
    "release": ("gate", "sentence_pairs.parquet", None),
}


def stage_inputs(ctx: pipeline.RunContext, stage: str) -> list[str]:
    folder, suffix, excluded = STAGE_INPUTS[stage]
    keys = [
        key
        for key in ctx.store.list_keys(stage_key(ctx.config.pair, ctx.run_id, folder, ""))
        if key.endswith(suffix) and not (excluded and key.endswith(excluded))
    ]
    if not keys:
        raise BitextflowError(f"no {folder} output for run {ctx.run_id!r} of {ctx.config.pair}; run `bitextflow {folder.replace('_', '-')}` first")
    return keys


def _mapped(run: Callable[[pipeline.RunContext, str], str], ctx: pipeline.RunContext, keys: Sequence[str], stage: str) -> list[str]:
    return [run(ctx, key) for key in tqdm(keys, desc=stage, unit="shard", file=sys.stderr)]


def run_stage(ctx: pipeline.RunContext, stage: str, inputs: list[str] | None = None) -> object:
    """Run one stage on its inputs (found in storage when not given); returns its output keys."""
    if stage == "crawl":
        return pipeline.run_crawl(ctx)
    keys = inputs if inputs is not None else stage_inputs(ctx, stage)
    mapped = {
        "extract": pipeline.run_extract,
        "align_sentences": pipeline.run_align_sentences,
        "score": pipeline.run_score,
        "classify": pipeline.run_classify,
    }
    if stage in mapped:
        return _mapped(mapped[stage], ctx, keys, stage)
    if stage == "align_documents":
        return pipeline.run_align_documents(ctx, keys)
    if stage == "gate":
        return pipeline.run_gate(ctx, keys)
    return pipeline.run_release(ctx, keys[0])


def cmd_stage(args: argparse.Namespace) -> int:
    outputs = run_stage(_context(args), args.stage)
    print(json.dumps(outputs, indent=2))
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
        description="Build domain-specific parallel corpora from the web. Stages, in order: "
        + " -> ".join(pipeline.STAGES),
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors (no progress)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def pair_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--pair", required=True, help="language pair, e.g. en-es (include/pairs/<pair>.yaml)")
        p.add_argument("--pairs-dir", help="folder of pair configs (default: include/pairs)")
        p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE", help="override a config option")
        p.add_argument(
            "--overrides", metavar="JSON", help="override options with a JSON object {\"section.field\": value} (--set wins)"
        )

    for stage in pipeline.STAGES:
        p = sub.add_parser(stage.replace("_", "-"), help=f"run the {stage} stage of one run")
        pair_options(p)
        p.add_argument("--run-id", required=True, help="run whose earlier stage outputs to read")
        p.set_defaults(func=cmd_stage, stage=stage)

    p = sub.add_parser("run", help="run every stage in order, without Airflow")
    pair_options(p)
    p.add_argument("--run-id", help="default: cli__<UTC timestamp>")
    p.set_defaults(func=cmd_run)

    releases = sub.add_parser("releases", help="published corpus versions").add_subparsers(dest="action", required=True)
    p = releases.add_parser("list", help="list the releases of a pair")
    pair_options(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_releases_list)

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
