# tablekeeper operator image: `docker build -t tablekeeper:0.1.0 .`
# Runs `tablekeeper operator` (Kopf, standalone) as a non-root user; the Helm chart in
# charts/tablekeeper passes --namespace/--liveness/--metrics-port and mounts /tmp.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY tablekeeper ./tablekeeper
# gcc only for the build: the native manifest decoder, name scan and batch unlink (optional C
# extensions; without them the Python code runs: same results, manifest decoding 4-10x slower) are
# compiled, then the compiler goes in the same layer.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install ".[operator]" \
    && (cd / && python -c "import tablekeeper.core.paimon.manifests._avro_native, tablekeeper.core.reclaim.orphans._name_scan_native, tablekeeper.core.storage._fs_native") \
    && apt-get purge -y --auto-remove gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* /src \
    && groupadd --gid 65532 tablekeeper \
    && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin tablekeeper

WORKDIR /
USER 65532:65532
# 8080: Kopf liveness endpoint (/healthz); 9090: Prometheus metrics.
EXPOSE 8080 9090
ENTRYPOINT ["tablekeeper", "operator"]
