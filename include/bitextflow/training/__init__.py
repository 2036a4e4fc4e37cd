"""Offline sources of training data: text that the models can learn from without a crawl, such as the
translated documentation, Bibles and message catalogs of Debian packages (:mod:`bitextflow.training.debian`
downloads and unpacks them into the cache)."""
