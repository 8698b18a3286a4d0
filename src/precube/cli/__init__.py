"""The `precube` command line."""
