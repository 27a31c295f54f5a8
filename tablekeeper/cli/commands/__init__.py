"""The commands of ``tablekeeper``, one module per family; :mod:`tablekeeper.cli.main` adds them to
the program. Each imports click and the CLI's helpers only: the engine modules a command runs are
imported when it runs (``tablekeeper --help`` stays fast)."""
