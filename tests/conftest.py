"""Shared pytest configuration: fixture plugins live in tests/support/."""

pytest_plugins = ["tests.support.s3", "tests.support.k8s", "tests.support.spark", "tests.support.stores",
                  "tests.support.catalogs",
                  "tests.support.spark_clusters"]
