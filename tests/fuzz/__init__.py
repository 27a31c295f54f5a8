"""Coverage-guided fuzz targets of the parsers of bytes tablekeeper reads from storage and of
the CR specs it is given (docs/robustness.md): ``targets.py`` defines them, ``run.py`` drives
one under atheris/libFuzzer (``scripts/fuzz``), ``test_corpus.py`` replays the corpus of every
target in the ordinary test run, ``seeds.py`` makes the seed corpus from tables pypaimon writes
and the Java-written fixture."""
