"""The fonts the report's plots draw a pair's languages in.

matplotlib draws a glyph that no font of its list has as a box, and warns ("Glyph 12531 missing from font(s) DejaVu
Sans"). DejaVu Sans draws Latin, Cyrillic and Greek; each other script a pair's language is written in (CLDR's likely
script) is drawn with its Noto font from Debian's fonts-noto-core and fonts-noto-cjk, which `make setup` installs.
Only the pair's scripts are listed: matplotlib looks every glyph up font by font. A font that is not installed is left
out (matplotlib would warn of it at every text).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import matplotlib
from matplotlib import font_manager

from bitextflow.text.scripts import likely_script

Drawing = TypeVar("Drawing", bound=Callable[..., Any])

BASE_FONT = "DejaVu Sans"
_CJK = "Noto Sans CJK JP"  # its Chinese, Japanese and Korean glyphs; the JP face's are the others' where they differ
#: ISO 15924 script -> the family that draws it.
# fmt: off
SCRIPT_FONTS = {
    "Arab": "Noto Sans Arabic", "Armn": "Noto Sans Armenian", "Beng": "Noto Sans Bengali",
    "Cans": "Noto Sans Canadian Aboriginal", "Cher": "Noto Sans Cherokee", "Deva": "Noto Sans Devanagari",
    "Ethi": "Noto Sans Ethiopic", "Geor": "Noto Sans Georgian", "Gujr": "Noto Sans Gujarati", "Guru": "Noto Sans Gurmukhi",
    "Hans": _CJK, "Hant": _CJK, "Hebr": "Noto Sans Hebrew", "Jpan": _CJK, "Khmr": "Noto Sans Khmer",
    "Knda": "Noto Sans Kannada", "Kore": _CJK, "Laoo": "Noto Sans Lao", "Mlym": "Noto Sans Malayalam",
    "Mong": "Noto Sans Mongolian", "Mymr": "Noto Sans Myanmar", "Olck": "Noto Sans Ol Chiki", "Orya": "Noto Sans Oriya",
    "Sinh": "Noto Sans Sinhala", "Syrc": "Noto Sans Syriac", "Taml": "Noto Sans Tamil", "Telu": "Noto Sans Telugu",
    "Tfng": "Noto Sans Tifinagh", "Thaa": "Noto Sans Thaana", "Thai": "Noto Sans Thai", "Tibt": "Noto Serif Tibetan",
}
# fmt: on


@functools.cache
def installed(family: str) -> bool:
    """Whether matplotlib finds ``family`` itself, not a stand-in."""
    try:
        font_manager.findfont(family, fallback_to_default=False)
    except ValueError:
        return False
    return True


def plot_fonts(languages: Iterable[str]) -> list[str]:
    """DejaVu Sans, then the installed fonts of the scripts ``languages`` are written in (matplotlib's fallback order)."""
    wanted = (SCRIPT_FONTS.get(likely_script(language) or "") for language in languages)
    return [BASE_FONT, *(family for family in dict.fromkeys(wanted) if family and installed(family))]


def in_pair_fonts(draw: Drawing) -> Drawing:
    """``draw(pair, ...)``, a function that draws a pair's plots (``en-ja``), with :func:`plot_fonts` of its languages."""

    @functools.wraps(draw)
    def drawn(pair: str, *args: Any, **kwargs: Any) -> Any:
        with matplotlib.rc_context({"font.family": plot_fonts(pair.split("-"))}):
            return draw(pair, *args, **kwargs)

    return cast(Drawing, drawn)
