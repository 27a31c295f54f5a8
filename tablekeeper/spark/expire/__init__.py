"""Snapshot and changelog expiration on Spark: ``driver`` runs core's expiration phases,
``plan`` evaluates one decision distributed (both import pyspark); ``executor`` holds the
functions their stages run on the executors (no pyspark)."""
