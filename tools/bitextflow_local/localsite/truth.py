"""Which pages of the local site are translations of which, as written by the builder.

It is the answer key for measuring document alignment and URL matching on the local site. It holds
site-relative paths, not URLs, so that it is independent of the host and port the site is served on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bitextflow.errors import StageError
from bitextflow_local.localsite.paths import TRUTH_FILENAME, default_cache_dir


def site_path(url: str) -> str:
    """The site-relative path a URL (or a path) names: `http://h:1/install/es/` -> `install/es/index.html`.

    Directory URLs name their index page, as the server resolves them.
    """
    path = unquote(urlsplit(url).path).lstrip("/")
    return path + "index.html" if path == "" or path.endswith("/") else path


class Truth:
    """Groups of pages that are the same document in different languages, the disallowed pages, and the
    pages that are partly translated (translations that keep part of the original's text).

    A group maps a language to the site-relative path of the document in that language; a document
    published in one language only is a group of one.
    """

    def __init__(
        self, groups: Sequence[Mapping[str, str]], disallowed: Sequence[str], partly_translated: Sequence[str] = ()
    ) -> None:
        self.groups: tuple[Mapping[str, str], ...] = tuple(groups)
        self.disallowed: frozenset[str] = frozenset(disallowed)
        self.partly_translated: frozenset[str] = frozenset(partly_translated)
        self._group_index = {path: index for index, group in enumerate(self.groups) for path in group.values()}

    @classmethod
    def load(cls, cache_dir: Path | None = None) -> Truth:
        """Read `<cache_dir>/truth.json` (default cache as in `build_site`)."""
        truth_path = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / TRUTH_FILENAME
        try:
            data = json.loads(truth_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StageError(f"{truth_path} does not exist: build the local site first (bitextflow-local site build)") from None
        except ValueError as error:
            raise StageError(f"{truth_path} is not valid JSON ({error}): build the local site again") from error
        # a site built before partly translated pages were made has none
        return cls(data["groups"], data["disallowed"], data.get("partly_translated", ()))

    def are_translations(self, url_a: str, url_b: str) -> bool:
        """Whether two URLs (any host; paths compared) are the same document in two languages."""
        path_a, path_b = site_path(url_a), site_path(url_b)
        group_a = self._group_index.get(path_a)
        return path_a != path_b and group_a is not None and group_a == self._group_index.get(path_b)

    def pairs(self, lang_a: str, lang_b: str) -> set[tuple[str, str]]:
        """Every (path in lang_a, path in lang_b) that are translations of each other."""
        return {(group[lang_a], group[lang_b]) for group in self.groups if lang_a in group and lang_b in group}

    def partly_translated_pairs(self, lang_a: str, lang_b: str) -> set[tuple[str, str]]:
        """The :meth:`pairs` whose lang_b page keeps part of the lang_a original's text untranslated."""
        return {(path_a, path_b) for path_a, path_b in self.pairs(lang_a, lang_b) if path_b in self.partly_translated}

    def documents(self, lang: str) -> set[str]:
        """The site-relative paths of every document published in `lang` (robots-disallowed pages excluded)."""
        return {group[lang] for group in self.groups if lang in group}

    def translation_precision(self, url_pairs: Iterable[tuple[str, str]]) -> float:
        """Share of (url_a, url_b) pairs, e.g. one per released sentence pair, that are true translations."""
        verdicts = [self.are_translations(url_a, url_b) for url_a, url_b in url_pairs]
        return sum(verdicts) / len(verdicts) if verdicts else 0.0
