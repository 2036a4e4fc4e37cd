"""Files of the local site that are written or copied rather than rendered: the manuals' stylesheets, images and
downloads, taken from the Debian packages as they ship them."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Sequence
from pathlib import Path

from bitextflow_local.localsite import generated
from bitextflow_local.localsite.layouts import INSTALL_DOC_DIR, REFERENCE_COMMON_DIR, REFERENCE_IMAGES_TARBALL


def copy_reference_assets(common_root: Path, docroot: Path) -> None:
    """The Reference's stylesheet and navigation images, and a tarball of the images to download."""
    source_dir = common_root / REFERENCE_COMMON_DIR
    copy_file(source_dir / "debian-reference.css", docroot / "reference" / "debian-reference.css")
    images = sorted((source_dir / "images").iterdir())
    for image in images:
        copy_file(image, docroot / "reference" / "images" / image.name)
    write_file(docroot, REFERENCE_IMAGES_TARBALL, generated.tarball([(f"images/{image.name}", image) for image in images]))


def copy_install_assets(install_root: Path, docroot: Path, languages: Sequence[str]) -> None:
    """The guide's stylesheet and images per language, and the files its pages link to.

    Its pages link to `install.<lang>.txt`, `install.<lang>.pdf` and `../example-preseed.txt`, which
    the package ships gzipped; they are served uncompressed so that those links work.
    """
    doc_dir = install_root / INSTALL_DOC_DIR
    for lang in languages:
        source_dir = doc_dir / lang
        target_dir = docroot / "install" / lang
        copy_file(source_dir / "install.css", target_dir / "install.css")
        for image in sorted((source_dir / "images").iterdir()):
            copy_file(image, target_dir / "images" / image.name)
        for extension in ("txt", "pdf"):
            name = f"install.{lang}.{extension}"
            if not (source_dir / f"{name}.gz").is_file():
                continue  # not every translation is built as PDF (Greek is not); the home page links what exists
            (target_dir / name).write_bytes(gzip.decompress((source_dir / f"{name}.gz").read_bytes()))
    (docroot / "install" / "example-preseed.txt").write_bytes(gzip.decompress((doc_dir / "example-preseed.txt.gz").read_bytes()))


def write_file(docroot: Path, site_path: str, content: str | bytes) -> None:
    """Write one file of the site, creating its directories; text is always UTF-8."""
    target = docroot / site_path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def copy_file(source: Path, target: Path) -> None:
    """Copy file contents only (no timestamps or modes), creating the target's directory."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
