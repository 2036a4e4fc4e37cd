"""Many small WARC files of a generated multi-site web: the input of ingest-mode runs (`crawl.warcs`) at any scale.

File i holds one HTML page. Pages come in twos, an English page and then a Spanish one, numbered by their
pair n = i // 2, on the site n % sites (`http://site-003.test/en/page-42.html`, `.../es/page-42.html`): the
Spanish page translates the English one, except every fifth pair, whose Spanish page is a note about
something else at another URL (`/es/nota-<n>.html`), so not every page has a counterpart. The text is a few
sentences built from parallel templates and words chosen by n, so that documents differ from each other
beyond a number. The same count and number of sites give the same bytes (fixed record ids and dates).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

DEFAULT_SITES = 10
UNTRANSLATED_EVERY = 5  # the Spanish page of every fifth pair is no translation
SENTENCES_PER_PAGE = 3
# Parallel templates and words: sentence k of page n is the same choice in both languages.
_TEMPLATES = (
    (
        "The package {name} installs the {thing} of the system, release {n}.",
        "El paquete {name} instala {thing} del sistema, versión {n}.",
    ),
    (
        "After an upgrade, {name} keeps the {thing} that the administrator changed.",
        "Después de una actualización, {name} conserva {thing} que el administrador cambió.",
    ),
    (
        "Read the manual of {name} before you edit the {thing} by hand.",
        "Lea el manual de {name} antes de editar {thing} a mano.",
    ),
    (
        "The security team checks the {thing} of {name} every week.",
        "El equipo de seguridad revisa {thing} de {name} cada semana.",
    ),
    (
        "A mirror near you serves the {thing} of {name} faster.",
        "Una réplica cercana sirve {thing} de {name} más rápido.",
    ),
)
_THINGS = (
    ("network configuration files", "los archivos de configuración de red"),
    ("kernel modules", "los módulos del núcleo"),
    ("boot loader settings", "la configuración del cargador de arranque"),
    ("user accounts", "las cuentas de usuario"),
    ("disk partitions", "las particiones del disco"),
    ("log files", "los archivos de registro"),
    ("printer drivers", "los controladores de impresora"),
)
_NAMES = ("apt", "dpkg", "systemd", "grub", "openssh", "cups", "rsyslog", "parted", "network-manager", "sudo", "tzdata")
_NOTE = "Nota {n}: la biblioteca municipal abre sus salas de lectura los sábados por la mañana durante todo el año."
_RECORD_DATE = "2026-01-01T00:00:00Z"


@dataclass(frozen=True)
class WarcPage:
    """One page of the generated web: its URL, language and text."""

    url: str
    lang: str
    text: str


def page(index: int, sites: int = DEFAULT_SITES) -> WarcPage:
    """The page of file `index`."""
    pair, side = divmod(index, 2)
    host = f"http://site-{pair % sites:03d}.test"
    if side == 0:
        return WarcPage(f"{host}/en/page-{pair}.html", "en", parallel_text(pair, 0))
    if not _translated(pair):
        return WarcPage(f"{host}/es/nota-{pair}.html", "es", _NOTE.format(n=pair))
    return WarcPage(f"{host}/es/page-{pair}.html", "es", parallel_text(pair, 1))


def _translated(pair: int) -> bool:
    return pair % UNTRANSLATED_EVERY != UNTRANSLATED_EVERY - 1


def parallel_text(pair: int, side: int) -> str:
    """Sentences of pair `pair` in English (side 0) or Spanish (side 1)."""
    sentences = []
    for k in range(SENTENCES_PER_PAGE):
        template = _TEMPLATES[(pair + k) % len(_TEMPLATES)][side]
        thing = _THINGS[(3 * pair + k) % len(_THINGS)][side]
        sentences.append(template.format(name=_NAMES[(7 * pair + k) % len(_NAMES)], thing=thing, n=pair))
    return " ".join(sentences)


def translated_pairs(count: int, sites: int = DEFAULT_SITES) -> set[tuple[str, str]]:
    """The (English URL, Spanish URL) of every translated pair among the first `count` files."""
    return {(page(2 * pair, sites).url, page(2 * pair + 1, sites).url) for pair in range(count // 2) if _translated(pair)}


def warc_files(count: int, sites: int = DEFAULT_SITES) -> Iterator[tuple[str, bytes]]:
    """(`file-00042.warc.gz`, its gzipped WARC/1.1 bytes) for each of `count` files."""
    for index in range(count):
        yield f"file-{index:05d}.warc.gz", warc_record(page(index, sites))


def warc_record(
    warc_page: WarcPage,
    status: str = "200 OK",
    content_type: str = "text/html; charset=utf-8",
    body: bytes | None = None,
    headers: Sequence[tuple[str, str]] = (),
    head: str = "",
) -> bytes:
    """A gzipped WARC/1.1 file of one response record (one gzip member): by default the page as UTF-8 HTML with its
    text in <main> (and ``head``, markup for its ``<head>``); ``status``, ``content_type`` and ``body`` give another
    response (a robots.txt, a 404); ``headers``: more HTTP headers."""
    if body is None:
        body = (
            f'<html lang="{warc_page.lang}"><head><title>{warc_page.text[:30]}</title>{head}</head>'
            f"<body><main><p>{warc_page.text}</p></main></body></html>"
        ).encode()
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True, warc_version="1.1")
    http_headers = StatusAndHeaders(status, [("Content-Type", content_type), *headers], protocol="HTTP/1.1")
    fixed = {"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, warc_page.url)}>", "WARC-Date": _RECORD_DATE}
    record = writer.create_warc_record(
        warc_page.url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http_headers, warc_headers_dict=fixed
    )
    writer.write_record(record)
    return buffer.getvalue()
