"""Subcommands of the `fimlsp` command line."""
