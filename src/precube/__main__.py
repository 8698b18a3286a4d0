"""`python -m precube`: the CLI (the background job runner starts this way)."""

from precube.cli.app import main

main()
