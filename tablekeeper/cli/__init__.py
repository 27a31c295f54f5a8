"""The tablekeeper command line."""
