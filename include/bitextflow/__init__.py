"""bitextflow: builds domain-specific parallel and monolingual corpora from the web.

The core library: stages (crawl, extract, align, score, classify, quality, release) over S3 storage.
It never imports Airflow; dags/ and plugins/ are thin glue over it.
"""

__version__ = "0.1.0"
