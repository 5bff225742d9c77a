"""Pulumi entry point: `pulumi up` runs this file."""

from program import main

main()
