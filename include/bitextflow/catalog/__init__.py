"""What a run keeps in the object store beyond its stage shards, and what outlives a run.

Releases (:mod:`~bitextflow.catalog.releases`) and their DVC registry (:mod:`~bitextflow.catalog.registry`),
published model versions (:mod:`~bitextflow.catalog.models`), crawl checkpoints
(:mod:`~bitextflow.catalog.checkpoints`) and existing WARC files ingested instead of a crawl
(:mod:`~bitextflow.catalog.warcs`). The algorithms below this layer never touch storage; stages and the
CLI above it use these to find and publish what they need.
"""
