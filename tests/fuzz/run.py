"""Run one fuzz target under atheris (libFuzzer): ``python -m tests.fuzz.run TARGET [libFuzzer
flags] [corpus dirs]``. ``scripts/fuzz`` builds the sanitized extensions, preloads the sanitizer
runtime and calls this for every target; run alone it fuzzes the ordinary build.

The sanitized extensions (``TABLEKEEPER_FUZZ_NATIVE``) are loaded first, then tablekeeper's
modules are imported under atheris' instrumentation, so that coverage guides the mutations
through the Python parsers as well as through the C code."""

from __future__ import annotations

import sys

from tests.fuzz.native import load_sanitized


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: python -m tests.fuzz.run TARGET [libFuzzer flags] [corpus dirs]")
    import atheris

    loaded = load_sanitized()
    with atheris.instrument_imports(include=["tablekeeper", "tests.fuzz.targets"]):
        # instrumented before any target imports them (a package's __init__ imports nothing itself)
        import tablekeeper.core.paimon.manifests.merge  # noqa: F401 - with the readers and decoders
        import tablekeeper.core.paimon.manifests.readers  # noqa: F401
        import tablekeeper.core.paimon.table  # noqa: F401
        import tablekeeper.core.policy.effective.resolution  # noqa: F401 - with the models it resolves
        import tablekeeper.core.policy.kinds  # noqa: F401 - every spec model
        import tablekeeper.core.reclaim.orphans.inventory  # noqa: F401
        import tablekeeper.core.reclaim.orphans.name_scan  # noqa: F401
        from tests.fuzz import targets

    target = targets.TARGETS.get(argv[1])
    if target is None:
        raise SystemExit(f"unknown target {argv[1]!r}; targets: {', '.join(targets.TARGETS)}")
    from tablekeeper.core.paimon.manifests import native

    if loaded:
        assert native._NATIVE is sys.modules["tablekeeper.core.paimon.manifests._avro_native"], "not the sanitized build"
    print(f"fuzz target {target.name}: sanitized extensions: {', '.join(loaded) or 'none (ordinary build)'}",
          file=sys.stderr, flush=True)
    import pyarrow

    # one thread in pyarrow's pools: the inventory target's Parquet/ORC reads otherwise start
    # worker threads, which under the sanitizer runtime have been seen to stall the run once
    pyarrow.set_cpu_count(1)
    pyarrow.set_io_thread_count(1)
    target.one_input(b"")  # warm the target's imports and caches outside the timed executions
    atheris.Setup([argv[0], f"-max_len={target.max_len}", *argv[2:]], target.one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
