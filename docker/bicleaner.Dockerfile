# Bicleaner image: bifixer, bicleaner-hardrules and bicleaner-ai (requirements-bicleaner.lock, the same locked
# set as .venv-bicleaner) plus the scoring script and one pair's bicleaner-ai model. The `bicleaner` task of a
# pair with `gpu.mode: kubernetes` runs it (plugins/bitextflow_airflow/external.py, docs/score.md):
#   python /opt/bitextflow/score_pairs.py --model /opt/bitextflow/model --source en --target es \
#       --input env:BITEXTFLOW_SCORE_INPUT_URL --output env:BITEXTFLOW_SCORE_OUTPUT_URL
# with presigned S3 GET and PUT URLs in those variables, signed when the task starts. It needs no S3
# credentials and no bitextflow package. Not built in CI (no Docker engine there). Build it from
# the repository root after `make setup` trained the model, with the model folder in the build context:
#   cp -r ~/.cache/bitextflow/models/bicleaner-en-es/v3 .bicleaner-model
#   docker build -f docker/bicleaner.Dockerfile -t <registry>/bitextflow-bicleaner-en-es:v3 .
# then set `score.bicleaner_image` of the pair config to that tag.
FROM python:3.11-slim-bookworm

ENV PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    TF_CPP_MIN_LOG_LEVEL=3 \
    HF_HUB_OFFLINE=1
WORKDIR /opt/bitextflow
# kenlm builds from source: a compiler and cmake for the build, removed afterwards.
COPY requirements-bicleaner.lock ./
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake libboost-all-dev zlib1g-dev \
 && pip install "$(grep '^uv==' requirements-bicleaner.lock)" \
 && uv pip install --system --no-deps -r requirements-bicleaner.lock \
 && apt-get purge -y build-essential cmake && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 50000 bitextflow
COPY include/bitextflow/score/envscripts/score_pairs.py ./score_pairs.py
COPY .bicleaner-model ./model
USER 50000
ENTRYPOINT []
CMD ["python", "/opt/bitextflow/score_pairs.py", "--help"]
