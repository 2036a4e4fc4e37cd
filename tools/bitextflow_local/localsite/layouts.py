"""What the local site is made of: its languages, the Debian manuals it shows and how their pages map
from the packages to the site (:class:`Section`), and the two layouts, default and full (:class:`Layout`).

Declarations only; :mod:`bitextflow_local.localsite.build` builds a site from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bitextflow_local.localsite import manpages

DEFAULT_LANGUAGES: tuple[str, ...] = ("en", "es", "fr", "de")
# The language the manuals are written in: what an untranslated part of a translated page is in.
ORIGINAL_LANGUAGE = "en"
# Languages the default site can be built in, with the name each language has in itself: both manuals are packaged
# in the first eight; Traditional Chinese has the Reference only; Russian, Korean, Vietnamese and Greek have the
# Installation Guide only
# (bench/release_precision.py --pair en-zh, en-ru, en-ko ...).
ENDONYMS: dict[str, str] = {
    "en": "English",
    "es": "Español",
    "fr": "Français",
    "de": "Deutsch",
    "it": "Italiano",
    "pt": "Português",
    "ja": "日本語",
    "id": "Bahasa Indonesia",
    "zh-cn": "中文(简)",
    "zh-tw": "中文(繁)",
    "ru": "Русский",
    "ko": "한국어",
    "vi": "Tiếng Việt",
    "el": "Ελληνικά",
}
# Every language of the full site with its endonym, in the order Debian's web site lists translations
# (by transliterated endonym: Català, Čeština, Dansk, Deutsch, Ellinika, English, Español...).
DEBIAN_LANGUAGE_ORDER: dict[str, str] = {
    "ca": "Català",
    "cs": "Čeština",
    "da": "Dansk",
    "de": "Deutsch",
    "el": "Ελληνικά",
    "en": "English",
    "es": "Español",
    "fr": "Français",
    "ko": "한국어",
    "id": "Bahasa Indonesia",
    "it": "Italiano",
    "nl": "Nederlands",
    "ja": "日本語",
    "pt": "Português",
    "pt-br": "Português do Brasil",
    "ro": "Română",
    "ru": "Русский",
    "sv": "Svenska",
    "vi": "Tiếng Việt",
    "zh-cn": "中文(简)",
    "zh-tw": "中文(繁)",
}

# A pair config's language code where the site (Debian) spells it otherwise: Simplified and Traditional Chinese.
_SITE_CODES = {"zh": "zh-cn", "zh_Hant": "zh-tw"}


def site_language(language: str) -> str:
    """The site's code of a pair config's language (``zh`` -> ``zh-cn``)."""
    return _SITE_CODES.get(language, language)


REFERENCE_COMMON_PACKAGE = "debian-reference-common"
REFERENCE_COMMON_DIR = "usr/share/debian-reference"
INSTALL_PACKAGE = "installation-guide-amd64"
INSTALL_DOC_DIR = "usr/share/doc/installation-guide-amd64"
REFERENCE_IMAGES_TARBALL = "downloads/debian-reference-images.tar.gz"


@dataclass(frozen=True)
class Section:
    """One manual, and how its pages map from the package to the site.

    `only_in` names pages whose other translations are dropped, so that the site has pages without a
    translation, as real sites do; a page restricted to a language that is not built keeps them all.
    `partly_translated` names pages whose translations have only the given top-level sections translated
    (numbered from 1), the rest of the body left in the original (`partial.py`), as unfinished translations
    are published.
    `link_rewrites` replaces links to files the package does not ship. `languages` are the ones the
    manual is packaged in (empty: every language of the site); `codes` maps a site language to the code
    the package uses for it (in file names and in the site's paths), `packages` and `source_dirs` a
    language to a package name or folder that does not follow `package` or `source_dir`. `stylesheet`
    names a file beside the pages that is copied beside them on the site.
    """

    title: str
    package: str
    source_dir: str
    source_file: str
    site_file: str
    only_in: Mapping[str, str]
    link_rewrites: Mapping[str, str]
    languages: tuple[str, ...] = ()
    codes: Mapping[str, str] = field(default_factory=dict)
    packages: Mapping[str, str] = field(default_factory=dict)
    source_dirs: Mapping[str, str] = field(default_factory=dict)
    stylesheet: str = ""
    partly_translated: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def code(self, lang: str) -> str:
        """The code of `lang` in this manual's file names."""
        return self.codes.get(lang, lang)

    def package_name(self, lang: str) -> str:
        """The Debian package holding this manual in `lang`."""
        return self.packages.get(lang) or self.package.format(lang=self.code(lang))

    def source_folder(self, lang: str) -> str:
        """The folder of this manual's pages in `lang` inside its package."""
        package = self.package_name(lang)
        return self.source_dirs.get(lang, self.source_dir).format(lang=self.code(lang), package=package)

    def built_in(self, languages: Sequence[str]) -> list[str]:
        """The languages of `languages` this manual is built in."""
        return [lang for lang in languages if not self.languages or lang in self.languages]

    def site_path(self, key: str, lang: str) -> str:
        """The site-relative path of page `key` in `lang`."""
        return self.site_file.format(key=key, lang=self.code(lang))


REFERENCE = Section(
    title="Debian Reference",
    package="debian-reference-{lang}",
    source_dir="usr/share/debian-reference",
    source_file="{key}.{lang}.html",
    site_file="reference/{key}.{lang}.html",
    only_in={"ch10": "en"},
    link_rewrites={},
    languages=("en", "de", "es", "fr", "id", "it", "ja", "pt", "pt-br", "zh-cn", "zh-tw"),
    # Chapter 11's translations have sections 11.1 and 11.3 translated: enough of their paragraphs that they are no
    # near-duplicates of the original for extraction (its tables of package names are the same in every language),
    # and under half of their text, so that they are identified as English.
    partly_translated={"ch11": (1, 3)},
)
INSTALL = Section(
    title="Installation Guide",
    package=INSTALL_PACKAGE,
    source_dir=INSTALL_DOC_DIR + "/{lang}",
    source_file="{key}.html",
    site_file="install/{lang}/{key}.html",
    only_in={"ch05s04": "es", "apds05": "es", "ch07s03": "fr"},
    # The guide links to a one-page HTML edition that the package does not ship.
    link_rewrites={"install.{lang}.html": "index.html"},
    languages=tuple(lang for lang in DEBIAN_LANGUAGE_ORDER if lang not in ("pt-br", "zh-tw")),
    codes={"zh-cn": "zh_CN"},
)
SECTIONS = (REFERENCE, INSTALL)
# The man pages of the full site (`bitextflow_local.localsite.manpages` finds and renders them): a key is
# `man2/open.2`, its pages `/man/man2/open.2.<lang>.html`.
MAN_PAGES = Section(
    title="Linux manual pages",
    package="manpages-{lang}",
    source_dir="usr/share/man",
    source_file="{key}.gz",
    site_file=manpages.SITE_DIR + "/{key}.{lang}.html",
    only_in={},
    link_rewrites={},
)
MAINT_GUIDE = Section(
    title="Debian New Maintainers' Guide",
    package="maint-guide-{lang}",
    source_dir="usr/share/doc/{package}/html",
    source_file="{key}.{lang}.html",
    site_file="maint-guide/{key}.{lang}.html",
    only_in={},
    link_rewrites={},
    languages=("en", "ca", "de", "es", "fr", "it", "ja", "ru", "vi", "zh-cn", "zh-tw"),
    packages={"en": "maint-guide"},
    stylesheet="debian.css",
)
FAQ = Section(
    title="The Debian GNU/Linux FAQ",
    package="debian-faq-{lang}",
    source_dir="usr/share/doc/debian/FAQ/{lang}",
    source_file="{key}.{lang}.html",
    site_file="faq/{key}.{lang}.html",
    only_in={},
    link_rewrites={},
    languages=("en", "de", "fr", "it", "ja", "ko", "nl", "pt", "ru", "zh-cn"),  # no Spanish: one-language pages for en-es
    packages={"en": "debian-faq"},
    source_dirs={"en": "usr/share/doc/debian/FAQ"},
    stylesheet="debian.css",
)


@dataclass(frozen=True)
class Layout:
    """Which manuals a site has, the languages it can be built in (home-page order, with endonyms),
    whether the home page links to a portal page per language instead of to the manuals directly, and
    its parts without translations: man pages (`bitextflow_local.localsite.manpages`, English with some
    translations) and the changelogs of `changelog_packages` (`bitextflow_local.localsite.changelogs`)."""

    name: str
    sections: tuple[Section, ...]
    endonyms: Mapping[str, str]
    portals: bool
    man_pages: bool = False
    changelog_packages: tuple[str, ...] = ()


DEFAULT_LAYOUT = Layout("default", SECTIONS, ENDONYMS, portals=False)
FULL_LAYOUT = Layout(
    "full",
    (
        # chapter 11 in English only, as the crawl benchmark's figures were measured (docs/crawl.md)
        replace(
            REFERENCE,
            only_in={"ch10": "en", "ch11": "en"},
            partly_translated={},
        ),
        INSTALL,
        MAINT_GUIDE,
        FAQ,
    ),
    DEBIAN_LANGUAGE_ORDER,
    portals=True,
    man_pages=True,
    changelog_packages=("debian-reference-en", "installation-guide-amd64", "maint-guide", "debian-faq", "manpages"),
)
# Bump when the full layout's output changes for the same packages (the default site keeps its stamp).
FULL_LAYOUT_VERSION = "2"


@dataclass(frozen=True)
class Document:
    """One page of a manual: its source file in each language it is published in (in build order)."""

    section: Section
    key: str
    sources: Mapping[str, Path]

    def site_path(self, lang: str) -> str:
        """The site-relative path of this page in `lang`."""
        return self.section.site_path(self.key, lang)
