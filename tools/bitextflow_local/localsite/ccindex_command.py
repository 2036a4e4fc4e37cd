"""``bitextflow-local site ccindex``: write a generated Common Crawl (:mod:`.ccindex`) into the local stack's S3 and
print the ``bitextflow run`` options of an en-es run from its index."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from bitextflow.errors import BitextflowError


def add_command(site_commands: argparse._SubParsersAction) -> None:
    """Add `ccindex` to the `site` commands; it runs :func:`run_command`."""
    from bitextflow_local.localsite.ccindex import BUCKET, CRAWLS

    command = site_commands.add_parser(
        "ccindex",
        help="write a generated Common Crawl (WARC files and a columnar index with its schema) into the local S3",
        description="Write the WARC files and the index of --sites generated sites (a fifth of them en-es bilingual) "
        "into --bucket of the local stack's S3 (or of BITEXTFLOW_S3_ENDPOINT_URL), then print the options of a run "
        "from that index (docs/commoncrawl.md).",
    )
    command.add_argument("--sites", type=int, default=40, help="how many sites (default 40)")
    command.add_argument("--bucket", default=BUCKET, help=f"bucket to write to (default {BUCKET})")
    command.add_argument(
        "--crawls",
        type=lambda value: [crawl.strip() for crawl in value.split(",") if crawl.strip()],
        default=list(CRAWLS),
        help=f"comma-separated crawl names (default {','.join(CRAWLS)}); the later ones recapture a third of the pages",
    )
    command.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    from bitextflow.settings import load_services_env
    from bitextflow.storage import ObjectStore
    from bitextflow_local.localsite.ccindex import build_index

    try:
        if args.sites < 1:
            raise BitextflowError(f"--sites {args.sites}: give at least 1")
        load_services_env()
        store = ObjectStore.from_env(args.bucket)
        store.ensure_bucket()
        generated = build_index(store, sites=args.sites, crawls=args.crawls)
    except BitextflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{generated.index_rows} captures of {generated.sites} sites ({len(generated.bilingual_sites)} bilingual) in "
          f"{len(generated.warc_bytes)} WARC files; index: {generated.table}")  # fmt: skip
    options = " ".join(f"--set {shlex.quote(f'{name}={json.dumps(value)}')}" for name, value in generated.overrides().items())
    print(f"bitextflow run --pair en-es --run-id cc-demo {options}")
    return 0
