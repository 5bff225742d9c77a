"""`python -m simulation run SCENARIO.yaml [--seed N] [--json]` — thin: parse, load, run, print."""

from __future__ import annotations

import argparse
import sys

from validation.errors import InputError, exit_with


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulation",
                                     description="Simulate one KServe InferenceService under a workload.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a scenario file and print the summary")
    run.add_argument("scenario", help="scenario YAML (names or embeds the InferenceService manifest)")
    run.add_argument("--seed", type=int, default=None, help="random seed (default: the scenario's seed, else 0)")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)

    from simulation import load_scenario, run_simulation
    try:
        scenario = load_scenario(args.scenario)
    except InputError as err:
        exit_with(err)
    if args.seed is not None and args.seed < 0:
        exit_with(_bad_seed(args.seed))
    seed = args.seed if args.seed is not None else (scenario.seed if scenario.seed is not None else 0)
    report = run_simulation(scenario, seed=seed)
    if args.json:
        sys.stdout.write(report.to_json() + "\n")
    else:
        report.render()
    return 0


def _bad_seed(seed: int) -> InputError:
    from validation.errors import Problem
    return InputError([Problem("--seed", seed, "expected an integer >= 0")])


if __name__ == "__main__":
    raise SystemExit(main())
