"""GNOME's help rendered as a local site (bitextflow_local.localsite.gnome_help), on Mallard pages written here: what
a page shows, and that a translation keeps the English page's blocks in order, so the block judge can pair them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bitextflow.errors import StageError
from bitextflow_local.localsite.block_truth import PageBlocks
from bitextflow_local.localsite.gnome_help import help_folder, running_paragraphs, translated_blocks, write_help_site

MALLARD_PAGE = """<?xml version="1.0" encoding="utf-8"?>
<page xmlns="http://projectmallard.org/1.0/" xmlns:if="http://projectmallard.org/if/1.0/" type="topic" id="{id}">
  <info>
    <link type="guide" xref="index#tasks"/>
    <desc>Not shown</desc>
  </info>
  <title>{title}</title>
  <p>{open} <gui>{settings}</gui>, <keyseq><key>Ctrl</key><key>Alt</key><key>T</key></keyseq>.</p>
  <if:choose>
    <if:when test="platform:gnome-classic"><p>Classic only.</p></if:when>
    <if:when test="!platform:gnome-classic"><p>{standard}</p></if:when>
  </if:choose>
  <p if:test="action:install">Install button.</p>
  {comment}
  <p>{see} <link xref="index"/>. <media type="image" src="figures/x.png">An icon</media>{after}</p>
  <terms>
    <item><title>{term}</title><p>{definition}</p></item>
  </terms>
  <table><title>{caption}</title><tr><td><p>{cell}</p></td></tr></table>
  <steps><item><p>{step}</p></item></steps>
</page>
"""
GUIDE_PAGE = """<?xml version="1.0" encoding="utf-8"?>
<page xmlns="http://projectmallard.org/1.0/" type="guide" id="index">
  <title>{title}</title>
  <links type="topic" style="2column"/>
  <section id="tasks"><title>{section}</title><links type="topic"/></section>
</page>
"""
ENGLISH = {"id": "set", "title": "Set a shortcut", "open": "Open", "settings": "Settings", "standard": "Standard desktop.",
           "comment": "<comment><p>An editor's note.</p></comment>", "see": "See", "after": " for more.",
           "term": "Shortcut", "definition": "Keys pressed together.", "caption": "Shortcuts", "cell": "Copy",
           "step": "Press the keys."}  # fmt: skip
PERSIAN = {"id": "set", "title": "تنظیم میان‌بر", "open": "بگشایید", "settings": "تنظیمات", "standard": "میزکار استاندارد.",
           "comment": "", "see": "ببینید", "after": " برای بیشتر.", "term": "میان‌بر", "definition": "کلیدهایی که با هم فشرده می‌شوند.",
           "caption": "میان‌برها", "cell": "Copy", "step": "کلیدها را فشار دهید."}  # fmt: skip


def _help_root(tmp_path: Path) -> Path:
    root = tmp_path / "help"
    for locale, texts, guide, section in (("C", ENGLISH, "GNOME Help", "Tasks"), ("fa", PERSIAN, "راهنمای گنوم", "کارها")):
        folder = root / locale / "gnome-help"
        folder.mkdir(parents=True)
        (folder / "set.page").write_text(MALLARD_PAGE.format(**texts), encoding="utf-8")
        (folder / "index.page").write_text(GUIDE_PAGE.format(title=guide, section=section), encoding="utf-8")
        # a translation nobody finished: its title alone is translated
        title = texts["title"] if locale == "fa" else "Set a shortcut again"
        (folder / "again.page").write_text(MALLARD_PAGE.format(**{**ENGLISH, "id": "again", "title": title}), encoding="utf-8")
    return root


def test_a_page_shows_what_the_standard_desktop_help_shows(tmp_path: Path) -> None:
    write_help_site(tmp_path / "cache", _help_root(tmp_path), ("en", "fa"))
    page = (tmp_path / "cache" / "site" / "help" / "en" / "set.html").read_text(encoding="utf-8")
    assert "<h1>Set a shortcut</h1>" in page
    assert "Open Settings, <kbd>Ctrl</kbd>+<kbd>Alt</kbd>+<kbd>T</kbd>." in page
    assert "Standard desktop." in page and "Classic only." not in page and "Install button." not in page
    assert "editor's note" not in page and "Not shown" not in page and "An icon" not in page
    assert 'See <a href="index.html">GNOME Help</a>.  for more.' in page  # an empty link shows its target's title
    assert "<dt>Shortcut</dt>" in page and "<caption>Shortcuts</caption>" in page and "<ol>" in page
    assert '<a href="/help/fa/set.html" hreflang="fa" lang="fa">fa</a>' in page
    guide = (tmp_path / "cache" / "site" / "help" / "fa" / "index.html").read_text(encoding="utf-8")
    # a guide's section lists the pages filed under it, once
    assert guide.count('<li><a href="set.html">تنظیم میان‌بر</a></li>') == 1
    assert guide.index("<h2>کارها</h2>") < guide.index('href="set.html"')


def test_a_translation_keeps_the_english_blocks_in_order_and_the_truth_pairs_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    write_help_site(cache, _help_root(tmp_path), ("en", "fa"))
    english = PageBlocks(cache / "site" / "help" / "en" / "set.html").keys
    persian = PageBlocks(cache / "site" / "help" / "fa" / "set.html").keys
    assert len(english) == len(persian)  # the English page's comment is left out: the translation has none
    assert [a for a, b in zip(english, persian, strict=True) if a == b] == ["copy"]  # the one block left in English
    truth = json.loads((cache / "truth.json").read_text(encoding="utf-8"))
    assert {"en": "help/en/set.html", "fa": "help/fa/set.html"} in truth["groups"]
    assert truth["partly_translated"] == ["help/fa/again.html"]


def test_running_paragraphs_pair_by_position_with_the_english_ones(tmp_path: Path) -> None:
    root = _help_root(tmp_path)
    pairs = list(translated_blocks(root, "fa", running_paragraphs))
    # the paragraphs the standard desktop shows at the page's top level, without the figure's text; terms, tables and
    # steps are not running text. The unfinished page's paragraphs are its English ones.
    assert pairs == [
        ("Open Settings, CtrlAltT.", "Open Settings, CtrlAltT."),
        ("Standard desktop.", "Standard desktop."),
        ("See . for more.", "See . for more."),
        ("Open Settings, CtrlAltT.", "بگشایید تنظیمات, CtrlAltT."),
        ("Standard desktop.", "میزکار استاندارد."),
        ("See . for more.", "ببینید . برای بیشتر."),
    ]
    assert help_folder(root, tmp_path / "unused cache") == root
    with pytest.raises(StageError, match="has no C/gnome-help"):
        help_folder(tmp_path, tmp_path / "unused cache")
