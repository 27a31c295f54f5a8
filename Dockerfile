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
RUN pip install ".[operator]" \
    && rm -rf /src \
    && groupadd --gid 65532 tablekeeper \
    && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin tablekeeper

WORKDIR /
USER 65532:65532
# 8080: Kopf liveness endpoint (/healthz); 9090: Prometheus metrics.
EXPOSE 8080 9090
ENTRYPOINT ["tablekeeper", "operator"]
