# GPU worker image: the same bitextflow package and locked dependencies as the Airflow image, with a
# CUDA build of torch. KubernetesPodOperator pods of GPU steps run it (plugins/bitextflow_airflow/dispatch.py,
# docs/gpu.md): command `bitextflow <stage> --pair <pair> --run-id <run id>`.
# Not built in CI (no Docker engine there):
#   docker build -f docker/gpu-worker.Dockerfile -t <registry>/bitextflow-gpu-worker:<version> .
# then set `gpu.image` of a pair config to that tag. The CUDA torch wheel brings the CUDA runtime
# libraries (cuBLAS, cuDNN, NCCL); the GPU node brings the NVIDIA driver (device plugin / container toolkit).
FROM python:3.11-slim-bookworm

# CUDA build of torch; pick the index matching the cluster's driver (cu126, cu128, ...).
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128
ENV PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

WORKDIR /opt/bitextflow
COPY requirements.lock pyproject.toml README.md ./
# torch alone first from the CUDA index; the rest is the same lock as the Airflow image (its CPU torch line dropped).
RUN pip install torch==2.13.0 --index-url ${TORCH_INDEX} \
 && grep -v '^torch==' requirements.lock > /tmp/requirements.lock \
 && pip install -r /tmp/requirements.lock \
 && rm /tmp/requirements.lock
# heliport (GPLv3) in an environment of its own, run as a command: a step that splits a page's sentences again
# (align_sentences, for partly translated pages) identifies them as extraction does
COPY requirements-heliport.txt ./
RUN python -m venv /opt/heliport && /opt/heliport/bin/pip install -r requirements-heliport.txt
COPY include ./include
RUN pip install --no-deps . \
 && useradd --create-home --uid 50000 bitextflow
# The pair configs the pod's `--pair` reads (rebuild the image when they change). No hub downloads at
# run time: models come from S3 / the image.
ENV BITEXTFLOW_PAIRS_DIR=/opt/bitextflow/include/pairs \
    BITEXTFLOW_HELIPORT=/opt/heliport/bin/heliport \
    BITEXTFLOW_SERVICES_ENV= \
    GX_ANALYTICS_ENABLED=false \
    HF_HUB_OFFLINE=1
USER 50000
ENTRYPOINT ["bitextflow"]
CMD ["--help"]
