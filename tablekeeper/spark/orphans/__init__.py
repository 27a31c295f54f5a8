"""Orphan cleanup on Spark: ``driver`` evaluates core's ``orphans.decide_orphan_clean`` (imports
pyspark); ``executor`` holds the functions its stages run on the executors (no pyspark)."""
