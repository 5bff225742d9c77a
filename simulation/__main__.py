"""`python -m simulation run SCENARIO.yaml [--seed N] [--json]` — thin: parse, load, run, print.
`python -m simulation calibrate vllm-log|bench FILE ...` — measured engine figures: `python -m preflight calibrate`
(preflight/calibrate.py), kept under this name too. This entry script, imported by no module, is the one place
simulation/ reaches a stack-level package (tests/test_layering.py)."""

from __future__ import annotations

import argparse
import sys

from validation.cli import guarded, progress_bar
from validation.errors import InputError, Problem


@guarded
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulation",
                                     description="Simulate one KServe InferenceService under a workload.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a scenario file and print the summary")
    run.add_argument("scenario", help="scenario YAML (names or embeds the InferenceService manifest)")
    run.add_argument("--seed", type=int, default=None, help="random seed (default: the scenario's seed, else 0)")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    run.add_argument("--max-requests", type=int, default=None, metavar="N",
                     help="request budget: refuse a run expected to simulate more than N requests (default: the "
                          "scenario's max_requests, else 2,000,000)")
    from preflight import calibrate
    calibrate.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "calibrate":
        return calibrate.run(args)

    from simulation import load_scenario, run_simulation
    if args.max_requests is not None and args.max_requests < 1:
        raise InputError([Problem("--max-requests", args.max_requests, "expected an integer >= 1")])
    scenario = load_scenario(args.scenario, max_requests=args.max_requests)
    if args.seed is not None and args.seed < 0:
        raise _bad_seed(args.seed)
    seed = args.seed if args.seed is not None else (scenario.seed if scenario.seed is not None else 0)
    with progress_bar(f"simulating {scenario.name} ({scenario.duration_s:g} s)") as progress:
        report = run_simulation(scenario, seed=seed, progress=progress)
    if args.json:
        sys.stdout.write(report.to_json() + "\n")
    else:
        report.render()
    return 0


def _bad_seed(seed: int) -> InputError:
    return InputError([Problem("--seed", seed, "expected an integer >= 0")])


if __name__ == "__main__":
    raise SystemExit(main())
