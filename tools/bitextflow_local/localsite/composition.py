"""What a built local site is made of, measured from its docroot and truth: is it a fair crawl target?

The crawl benchmark's claims depend on the site: how many pages have no translation at all, how deep
the pages are, and where a pair's translated pages come in a breadth-first crawl. This module answers
that offline, by walking the docroot's links from the home page the way a breadth-first crawler does
(first found, first fetched; robots-disallowed pages and links to files the crawler does not fetch
left out), so no server or crawl is needed. `bitextflow-local site stats [--full]` prints it.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bitextflow.crawl.urls import extract_links
from bitextflow_local.localsite.truth import Truth, site_path

# Only the host matters to the link resolver; nothing is requested.
_BASE = "http://127.0.0.1/"
# What the crawler fetches (its default content types); other files are downloads it skips.
_FETCHED_SUFFIXES = (".html", ".txt")


@dataclass(frozen=True)
class Composition:
    """The figures of one site for one language pair.

    ``bfs_order`` is the site-relative path of every fetched page in breadth-first order, ``depths``
    the link depth of each; ``pair_found_at`` the download (1-based) at which each translated page pair
    of ``pair`` has both its pages, sorted; ``pair_pages`` how many fetched pages are in a language of
    the pair. ``ideal_auc`` and ``bfs_auc`` are the areas under (share of downloads, share of pairs
    found) of the best possible order (the two pages of each pair one after the other, first) and of
    breadth first, so their ratio is the most any strategy can gain over ``bfs`` on this site.
    """

    pages_per_language: Mapping[str, int]
    documents: int
    one_language_documents: int
    bfs_order: Sequence[str]
    depths: Mapping[str, int]
    pair: tuple[str, str]
    pair_pages: int
    pair_found_at: Sequence[int]

    @property
    def ideal_auc(self) -> float:
        return best_order_auc(len(self.pair_found_at), len(self.bfs_order))

    @property
    def bfs_auc(self) -> float:
        return found_auc(self.pair_found_at, len(self.bfs_order))

    def bfs_share_at(self, percent: int) -> float:
        """Share of the pair's page pairs complete after ``percent``% of a breadth-first crawl."""
        if not self.pair_found_at:
            return 0.0
        cutoff = max(1, math.ceil(len(self.bfs_order) * percent / 100))
        return sum(at <= cutoff for at in self.pair_found_at) / len(self.pair_found_at)

    def as_dict(self) -> dict:
        """The figures as JSON-ready values (the BFS order itself left out)."""
        found, downloads = self.pair_found_at, len(self.bfs_order)
        return {
            "documents": self.documents,
            "pages_per_language": dict(self.pages_per_language),
            "one_language_documents": self.one_language_documents,
            "fetched_by_bfs": downloads,
            "depth_histogram": {str(depth): count for depth, count in sorted(Counter(self.depths.values()).items())},
            "pair": "-".join(self.pair),
            "pair_pages_share": round(self.pair_pages / downloads, 4) if downloads else 0.0,
            "pairs": len(found),
            "bfs_pairs_complete_at": {"first": found[0], "median": found[len(found) // 2], "last": found[-1]} if found else {},
            "bfs_share_found_at": {str(p): round(self.bfs_share_at(p), 4) for p in (20, 40, 60)},
            "ideal_auc": round(self.ideal_auc, 4),
            "bfs_auc": round(self.bfs_auc, 4),
            "max_auc_vs_bfs": round(self.ideal_auc / self.bfs_auc, 4) if self.bfs_auc else None,
        }


def pairs_auc(curve: Sequence[int], total: int) -> float:
    """Area under (share of downloads, share of the ``total`` pairs found), where ``curve[k]`` is the
    number of pairs complete after download k + 1; trapezoids from (0, 0). The crawl benchmark's measure."""
    if not curve or not total:
        return 0.0
    points = [0, *curve]
    return sum((a + b) / 2 for a, b in zip(points, points[1:], strict=False)) / (len(curve) * total)


def found_auc(found_at: Sequence[int], downloads: int) -> float:
    """:func:`pairs_auc` of a crawl of ``downloads`` pages in which pair k completes at download ``found_at[k]``."""
    completed = Counter(found_at)
    curve, found = [], 0
    for download in range(1, downloads + 1):
        found += completed.get(download, 0)
        curve.append(found)
    return pairs_auc(curve, len(found_at))


def best_order_auc(pairs: int, downloads: int) -> float:
    """The most any crawl order can reach: the two pages of each of ``pairs`` pairs downloaded one after
    the other, before anything else."""
    return found_auc([2 * (k + 1) for k in range(pairs)], downloads)


def breadth_first(docroot: Path, disallowed: Collection[str]) -> tuple[list[str], dict[str, int]]:
    """Site paths of the fetched pages in breadth-first order from the home page, and their depths."""
    order: list[str] = []
    depths = {"index.html": 0}
    queue = deque(["index.html"])
    while queue:
        path = queue.popleft()
        file = docroot / path
        if not file.is_file():
            continue  # a broken link: the crawler gets a 404 and logs it, but it is no page
        order.append(path)
        if not path.endswith(".html"):
            continue
        for url in extract_links(file.read_bytes(), _BASE + path):
            if not url.startswith(_BASE):
                continue
            target = site_path(url)
            if target in depths or target in disallowed or not target.endswith(_FETCHED_SUFFIXES):
                continue
            depths[target] = depths[path] + 1
            queue.append(target)
    return order, {path: depths[path] for path in order}


def measure(docroot: Path, truth: Truth, pair: tuple[str, str]) -> Composition:
    """Walk ``docroot`` breadth first from its home page and measure it against ``truth`` for ``pair``."""
    order, depths = breadth_first(docroot, truth.disallowed)
    language_of = {path: lang for group in truth.groups for lang, path in group.items()}
    position = {path: index + 1 for index, path in enumerate(order)}
    found_at = sorted(max(position[a], position[b]) for a, b in truth.pairs(*pair) if a in position and b in position)
    per_language = Counter(lang for group in truth.groups for lang in group)
    return Composition(
        pages_per_language=dict(per_language.most_common()),
        documents=len(truth.groups),
        one_language_documents=sum(len(group) == 1 for group in truth.groups),
        bfs_order=order,
        depths=depths,
        pair=pair,
        pair_pages=sum(language_of.get(path) in pair for path in order),
        pair_found_at=found_at,
    )
