"""Pulumi entry point: `pulumi up` runs this file (as `__main__`, `runpy.run_path(..., run_name="__main__")`).

The guard keeps a worker process that re-imports the parent's main file (multiprocessing's spawn and forkserver
start methods, as `__mp_main__`) from running the program again."""

from program import main

if __name__ == "__main__":
    main()
