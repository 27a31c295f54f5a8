# The Spark job image: the official Apache Spark image with Python, plus tablekeeper (the package
# and its pinned runtime dependencies, and the object-store clients), for the operator's Spark runs
# (SparkJob and SparkOperator) and for spark-submit on Kubernetes. Built from a checkout:
#
#   docker build -f docker/spark-job.Dockerfile -t registry.example.com/tablekeeper-spark:0.1.0 .
#   docker build -f docker/spark-job.Dockerfile --build-arg SPARK_VERSION=3.5.5 -t ...:0.1.0-spark3.5 .
#
# What it installs is what the chart's spark values point at (spark.mainFile, spark.python,
# spark.sparkSubmit, spark.sparkVersion; tests/chart checks they agree). apache/spark 4.0's python3
# images are Ubuntu 22.04 with Python 3.10, which the job supports.
ARG SPARK_VERSION=4.0.1
FROM apache/spark:${SPARK_VERSION}-python3

USER root
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY tablekeeper ./tablekeeper
# pyspark is the image's own (spark-submit puts $SPARK_HOME/python on the path): not the spark extra.
# The C extensions are built when a compiler is there and optional otherwise.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev python3-dev \
    && /usr/bin/python3 -m pip install ".[stores]" \
    && apt-get purge -y --auto-remove gcc libc6-dev python3-dev \
    && rm -rf /var/lib/apt/lists/* /src \
    && mkdir -p /opt/tablekeeper \
    && ln -s "$(cd / && /usr/bin/python3 -c 'import tablekeeper.spark.__main__ as m; print(m.__file__)')" /opt/tablekeeper/job.py \
    && test -x /opt/spark/bin/spark-submit \
    && (cd / && /usr/bin/python3 -c "import tablekeeper.spark.job_request, tablekeeper.core.plans")

WORKDIR /opt/spark/work-dir
# the image's own user (spark, uid 185)
USER 185
