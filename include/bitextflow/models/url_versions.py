"""What every version folder of the smart crawl's URL models has, whichever kind of models it holds
(:mod:`bitextflow.models.url_models`, :mod:`bitextflow.models.url_ngrams`): ``url-models.json``, written last (a folder
without it is incomplete), in this format."""

METADATA_FILENAME = "url-models.json"
FORMAT_VERSION = 1
