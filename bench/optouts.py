"""What the opt-out policy and the machine-translation signals cost, on real web pages.

The pages are the 165 of the extraction gold folders under ../shared/eval (scrapinghub article-extraction pages and
trafilatura's evaluation pages, many languages and sites), as ``bench/extract_throughput.py`` reads them. Measured, in
this process, the median of ``--runs`` passes each:

- ``markup_ms_per_page``: :func:`bitextflow.policy.read_page` on every page (headers and body: what the crawler does
  after each fetch and extraction does for every response), and ``pages_parsed``, the pages whose bytes hold a word a
  signal is written with and so get parsed; ``parsed_markup_ms_per_page``: the same with a ``noai`` robots meta put
  in every page, so that every page is parsed;
- ``extract_ms_per_page``: the whole extraction of the same pages (:func:`bitextflow.extract.extract_shard`, the en-es
  settings, from a WARC file), of which ``markup_share`` is the reading of signals;
- ``site_scan_ms_per_page``: the extra pass an ingested shard gets before extraction (its origins and robots.txt
  captures: :func:`bitextflow.catalog.site_files.shard_sites`), and its share of the extraction;
- ``robots_us_per_url``: one verdict of a parsed robots.txt of 40 groups for the default agents (18 of them);
- ``signals``: the signals found among the pages (which opt-outs and machine-translation signals real pages carry).

Usage, from the project root::

    .venv/bin/python bench/optouts.py [--json] [--runs 3] [--data-dir ../shared/eval]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from extract_throughput import DEFAULT_EVAL, ROOT, _pages, write_warc

ROBOTS = "".join(f"User-agent: bot-{n}\nDisallow: /private-{n}/\nAllow: /private-{n}/public\n\n" for n in range(39)) + (
    "User-agent: *\nDisallow: /search\nDisallow: /*.pdf$\n"
)


def _median_seconds(work, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--runs", type=int, default=3, help="passes per measurement; the median is reported")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_EVAL, help="the folder holding the extraction gold folders")
    args = parser.parse_args(argv)

    from bitextflow.catalog.site_files import shard_sites
    from bitextflow.config import DEFAULT_ROBOTS_AGENTS, load_pair_config
    from bitextflow.extract import extract_shard
    from bitextflow.policy import RobotsFile, read_page
    from bitextflow.policy.markup import may_hold_signals

    pages = _pages(args.data_dir)
    if not pages:
        print(f"no pages under {args.data_dir}: it needs scrapinghub_article_extraction/ or trafilatura_eval/", file=sys.stderr)
        sys.exit(2)
    agents = list(DEFAULT_ROBOTS_AGENTS)
    headers = [("Content-Type", "text/html")]
    found = [read_page(url, headers, body, agents) for url, body in pages]
    signals = Counter(s.machine_translation for s in found if s.machine_translation)
    signals.update("noai" for s in found if "noai" in s.robots_directives)
    signals.update("tdm-reservation" for s in found if s.tdm_reservation == 1)
    parsed = sum(may_hold_signals(body) for _url, body in pages)

    markup = _median_seconds(lambda: [read_page(url, headers, body, agents) for url, body in pages], args.runs)
    marked = [(url, body.replace(b"<head>", b'<head><meta name="robots" content="noai">', 1)) for url, body in pages]
    parsing = _median_seconds(lambda: [read_page(url, headers, body, agents) for url, body in marked], args.runs)
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        warc = Path(tmp) / "pages.warc.gz"
        write_warc(pages, warc)

        def extract() -> None:
            extract_shard(warc, Path(tmp) / "out", warc_key="bench.warc.gz", languages={"en", "es"}, config=config.extract,
                          domain=config.domain, policy=config.policy)  # fmt: skip

        def scan() -> None:
            with open(warc, "rb") as stream:
                shard_sites(stream, config.extract.max_page_bytes)

        extraction = _median_seconds(extract, args.runs)
        site_scan = _median_seconds(scan, args.runs)
    robots = RobotsFile.of_answer(ROBOTS.encode())
    urls = [f"https://example.org/private-{n % 50}/page-{n}.html" for n in range(2000)]
    verdicts = _median_seconds(lambda: [robots.verdict(url, agents) for url in urls], args.runs)

    result = {
        "pages": len(pages),
        "pages_parsed": parsed,
        "markup_ms_per_page": round(markup / len(pages) * 1000, 3),
        "extract_ms_per_page": round(extraction / len(pages) * 1000, 2),
        "markup_share": round(markup / extraction, 4),
        "parsed_markup_ms_per_page": round(parsing / len(pages) * 1000, 3),
        "mean_page_kb": round(sum(len(body) for _url, body in pages) / len(pages) / 1000, 1),
        "site_scan_ms_per_page": round(site_scan / len(pages) * 1000, 3),
        "site_scan_share": round(site_scan / extraction, 4),
        "robots_us_per_url": round(verdicts / len(urls) * 1e6, 1),
        "robots_agents": len(agents),
        "signals": dict(sorted(signals.items())),
    }
    print(f"{len(pages)} pages of {result['mean_page_kb']} kB ({parsed} parsed for signals): signals {result['markup_ms_per_page']} "
          f"ms/page, {result['parsed_markup_ms_per_page']} ms/page when parsed "
          f"({result['markup_share']:.1%} of extraction's {result['extract_ms_per_page']} ms/page); ingest site scan "
          f"{result['site_scan_ms_per_page']} ms/page ({result['site_scan_share']:.1%}); robots.txt verdict for "
          f"{len(agents)} agents {result['robots_us_per_url']} us/URL; signals found: {result['signals'] or 'none'}")  # fmt: skip
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
