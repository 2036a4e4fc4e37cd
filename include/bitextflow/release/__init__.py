"""Release files: the corpus (TSV, TMX, JSONL, monolingual text), statistics, an HTML report and a
datasheet, written into a local folder from a run's gated sentence pairs.

:mod:`~bitextflow.release.formats` holds the file formats, :mod:`~bitextflow.release.build` writes a
release's files, :mod:`~bitextflow.release.report` and :mod:`~bitextflow.release.datasheet` render the
report and the datasheet. Publishing them as numbered versions in the object store and recording them
in a DVC registry is :mod:`bitextflow.catalog`.
"""
