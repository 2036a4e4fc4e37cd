"""URL layouts a site of a web (:mod:`bitextflow_local.localsite.multisite`) can publish its language versions under,
besides the local site's own: where each page of the local site goes under each layout."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

#: URL layouts of a site's language versions (``build_web(layouts=...)``), by what a page of the local site at
#: ``reference/ch01.es.html`` or ``install/es/ch01.html`` (language-neutral ``reference/ch01.html``) becomes:
#: ``as-built`` keeps it; ``folder``: ``es/reference/ch01.html``; ``names``: ``spanish/reference/ch01.html``;
#: ``letter``: ``reference/ch01_s.html`` (WMT16's ``_e``/``_f``, which no rule can read); ``numbered``:
#: ``2/reference/ch01.html`` (the n-th language of the web); ``translated``: the first language at the neutral path,
#: the others at opaque paths (``x/9c1e4f0a.html``: translated paths). Pages in one language without a marker (news)
#: keep their path.
LAYOUTS = ("as-built", "folder", "names", "letter", "numbered", "translated")
_LANGUAGE_NAMES = {"en": "english", "es": "spanish", "fr": "french", "de": "german"}
_MARKED = re.compile(r"^(?P<stem>.+)\.(?P<lang>[a-z]{2})\.html$|^(?P<manual>[^/]+)/(?P<dirlang>[a-z]{2})/(?P<rest>.+)$")


def laid_out(published: Sequence[Mapping[str, str]], layout: str, languages: Sequence[str]) -> dict[str, str]:
    """Where the published pages of a site go under ``layout`` (:data:`LAYOUTS`): local-site path -> site path, for
    the pages that move."""
    if layout == LAYOUTS[0]:
        return {}
    moved = {}
    for document in published:
        for lang, path in document.items():
            neutral = _neutral(path, lang)
            if neutral is not None:
                moved[path] = _path_in(layout, neutral, lang, languages)
    return moved


def _neutral(path: str, lang: str) -> str | None:
    """The path of a local-site page without its language marker (``reference/ch01.es.html``, ``install/es/ch01.html``
    -> ``reference/ch01.html``, ``install/ch01.html``), or None when it carries none."""
    marked = _MARKED.match(path)
    if marked is None:
        return None
    if marked["lang"] == lang:
        return f"{marked['stem']}.html"
    return f"{marked['manual']}/{marked['rest']}" if marked["dirlang"] == lang else None


def _path_in(layout: str, neutral: str, lang: str, languages: Sequence[str]) -> str:
    """The site path of the ``lang`` version of the page at ``neutral`` under ``layout`` (:data:`LAYOUTS`)."""
    name = _LANGUAGE_NAMES.get(lang, lang)
    stem, extension = neutral.rsplit(".", 1)
    if layout == "folder":
        return f"{lang}/{neutral}"
    if layout == "names":
        return f"{name}/{neutral}"
    if layout == "letter":
        return f"{stem}_{name[0]}.{extension}"
    if layout == "numbered":
        return f"{languages.index(lang) + 1}/{neutral}"
    if lang == languages[0]:  # translated: the first language keeps the neutral path, the others get opaque ones
        return neutral
    digest = hashlib.sha1(f"{lang}/{neutral}".encode()).hexdigest()
    return f"{digest[:2]}/{digest[2:10]}.{extension}"
