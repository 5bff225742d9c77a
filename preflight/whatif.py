"""What a config change does, both sides simulated on common random numbers: `sides` reads the two stack configs,
`compare` simulates and pairs them (the command: preflight/whatif_cli.py; its tables: preflight/whatif_tables.py).

"before" is the stack file as it is (or as it was at git revision REV with `--against`); "after" is the working
tree's file with the `--set` edits. Both sides run every gate scenario (`gate.trials`) with the same seeds,
replication by replication (seed i = `simulation.replicate.replication_seed(gate.seed, i)`), so the arrival
stream, token sizes and start-up draws match and the paired difference after − before has a far narrower
interval than two independent runs would give (common random numbers; Law & Kelton §11.2). Per metric the table
shows each side's estimate with its 95 % interval, the mean paired difference with its 95 % t-interval (a p99:
the difference of the two sides' pooled p99s; a rate: of their pooled rates, by MOVER on the two intervals with
the pairs' correlation; `simulation.report_terms.difference`), and
each side's SLO verdict, term by term matched by name (a term one side does not have, say a `--set` that adds
`slo.p99TtftS`, shows as not a term on the other). `--workload` / `--rate-scale` change the traffic of both sides.

Each side runs on its own `gate.seed`, so every column rests on the runs its verdict was decided on. When the
sides' seeds differ (`--set gate.seed=N`, or `--against` a revision with another seed) there are no common
random numbers: the runs are independent, the difference unpaired (Welch's; a rate's MOVER with r = 0; wider,
and the table says so), and a scenario the edits leave alone is not "unchanged" (it ran on other seeds). That is
allowed rather than refused because it answers a real question: does the verdict hold on other seeds, or against
an older revision with its own seed. `gate.durationS` and the other gate settings do not break the pairing: each
side's scenario has its own duration on the same seeds, and its column and verdict share those runs.

Each side's verdict is the gate's own (`gate.sequential.decide`: replications doubled while a term is undecided,
`gate.undecided` after `gate.replications.max`), so it is the verdict `preflight check` and `pulumi up` give that
config. The estimates and the paired difference use `--replications` seeds per side, or as many as either
side's verdict took when that is more (the same seeds: the runs are shared).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from typing import Any

from gate import trials as gate_trials
from gate.sequential import Decision
from gate.verdict import Verdict
from preflight.overrides import apply_set, apply_sets, read_workload, set_workloads, stack_values
from simulation.estimates import Estimate
from simulation.replicate import replication_seeds, submit_replications
from simulation.report_terms import METRICS, difference, estimates
from stackconfig.load import ROOT
from stackconfig.schema import StackConfig, parse_stack_config
from validation.errors import InputError, Problem

@dataclass
class Comparison:
    """One gate scenario on both sides: each side's gate verdict, and the paired runs (`reports`, `metrics`)."""

    key: Any
    before: Verdict
    after: Verdict
    reports: tuple[list[dict], list[dict]]
    difference: dict[str, Estimate] = field(default_factory=dict)
    unchanged: bool = False  # the same scenario and seeds on both sides: the edits do not touch it
    metrics: tuple[dict[str, Estimate], dict[str, Estimate]] = ({}, {})   # each side over the compared runs
    common_random_numbers: bool = True   # False: the sides ran on different gate.seed (an unpaired difference)

    @property
    def replications(self) -> int:
        return len(self.reports[0])

    def to_dict(self) -> dict:
        return {"unchanged": self.unchanged, "before": self.before.to_dict(), "after": self.after.to_dict(),
                "paired": {"replications": self.replications,
                           "before": {k: e.to_dict() for k, e in self.metrics[0].items()},
                           "after": {k: e.to_dict() for k, e in self.metrics[1].items()}},
                "difference": {k: e.to_dict() for k, e in self.difference.items()}}


@dataclass
class WhatIf:
    stack: str
    against: str | None
    sets: list[str]
    replications: int
    seeds: list[int]
    comparisons: list[Comparison]
    only: dict[str, list[str]]  # scenarios present on one side only
    seeds_after: list[int] = field(default_factory=list)   # the after side's (`seeds` unless gate.seed differs)
    gate_seeds: tuple[int, int] = (0, 0)   # each side's gate.seed

    @property
    def common_random_numbers(self) -> bool:
        return self.gate_seeds[0] == self.gate_seeds[1]

    @property
    def passed_after(self) -> bool:
        return all(c.after.passed for c in self.comparisons)

    def to_dict(self) -> dict:
        return {"stack": self.stack, "against": self.against, "set": self.sets, "replications": self.replications,
                "seeds": self.seeds, "seeds_after": self.seeds_after,
                "common_random_numbers": self.common_random_numbers,
                "passed_before": all(c.before.passed for c in self.comparisons), "passed_after": self.passed_after,
                "only": self.only,
                "scenarios": {c.after.label: c.to_dict() for c in self.comparisons}}


_PROBE = "kserve-preflight-set-target-probe"


def _where(node: Any, prefix: tuple = ()) -> tuple | None:
    """The key path (keys and list indices) of `_PROBE` in `node`, or None."""
    if isinstance(node, str):
        return prefix if node == _PROBE else None
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        found = _where(child, (*prefix, key))
        if found is not None:
            return found
    return None


def check_distinct_sets(values: dict, sets: list[str]) -> None:
    """Refuse two `--set`s of one key (`services.chat.maxReplicas` and `services.0.maxReplicas` are one key), or
    a `--set` whose key a later one replaces as a whole: the last would win without a word, and a user who typed
    two values meant one. Each edit's key is found by applying it, with a marker for its value, to the values as
    the edits before it left them (so a path is resolved exactly as `apply_set` resolves it)."""
    state, targets = copy.deepcopy(values), []
    for assignment in sets:
        edited = copy.deepcopy(state)
        apply_set(edited, assignment)  # a bad edit is refused here, in the user's own words
        probe = copy.deepcopy(state)
        apply_set(probe, f"{assignment.partition('=')[0]}={_PROBE}")
        targets.append(_where(probe))
        state = edited
    problems = []
    for i, (earlier, key) in enumerate(zip(sets, targets)):
        for later, other in zip(sets[i + 1:], targets[i + 1:]):
            if key is None or other is None or key[:len(other)] != other:
                continue
            what = "sets the same key again" if key == other else "replaces the whole of it"
            problems.append(Problem("--set", earlier, f"one value per key; the later --set {later!r} {what}, "
                                    "so this one would be silently lost"))
            break
    if problems:
        raise InputError(problems)


def sides(stack: str, sets: list[str], against: str | None = None, workload: str | None = None,
          rate_scale: float | None = None, services: list[str] | None = None) -> tuple[StackConfig, StackConfig]:
    """The before and after configs, each parsed (and so checked) by the stack schema."""
    if rate_scale is not None and not (0 < rate_scale <= 1000):
        raise InputError([Problem("--rate-scale", rate_scale, "expected a number in (0, 1000]")])
    project, before = stack_values(stack, against)
    base = stack_values(stack)[1] if against else before
    check_distinct_sets(base, sets)
    after = apply_sets(base, sets)
    wl = read_workload(workload) if workload else None
    chosen = set(services) if services else None
    plain = before, after
    before, after = (set_workloads(v, chosen, wl, rate_scale) for v in plain)
    origin = f"stacks/Pulumi.{stack}.yaml" + (f" at {against}" if against else "")

    def parse(b: dict, a: dict) -> tuple[StackConfig, StackConfig]:
        return (parse_stack_config(b, project, stack, origin),
                parse_stack_config(a, project, stack, f"stacks/Pulumi.{stack}.yaml with --set"))
    try:
        return parse(before, after)
    except InputError as err:
        if workload is None and rate_scale is None:
            raise
        parse(*plain)   # a problem of the stack itself (and its --set edits) is named at its own key
        flag = f"--workload {workload}" if workload is not None else f"--rate-scale {rate_scale:g}"
        raise _blame_traffic(err, flag, after, _changed(plain[1], after)) from None


def _changed(values: dict, edited: dict) -> set[int]:
    """The indices of the services whose entry `set_workloads` changed (those the traffic flags touched)."""
    old, new = values.get("services"), edited.get("services")
    if not isinstance(old, list) or not isinstance(new, list):
        return set()
    return {i for i, (a, b) in enumerate(zip(old, new)) if a != b}


_WORKLOAD_KEY = re.compile(r"(?:^|:)services\[(\d+)\]\.workload(?:\.(.+))?$")


def _blame_traffic(err: InputError, flag: str, values: dict, changed: set[int]) -> InputError:
    """`err` with every problem keyed by the flag that made it, `--workload FILE` or `--rate-scale X`, not by the
    stack file, which the user did not change (review rev13-bounds finding 7): `sides` calls it only once the
    stack parses without the flag. A problem of a workload the flag set (the load check's request budget, a step
    past durationS) names that service and key; one keyed elsewhere (a run's budget at another service's part,
    the whole gate's budget at gate.replications: review rev14-diff F4, F5) names the key it was found at."""
    listed = values.get("services") if isinstance(values.get("services"), list) else []
    problems = []
    for p in err.problems:
        m = _WORKLOAD_KEY.search(p.path)
        if m is None or int(m.group(1)) not in changed:
            problems.append(Problem(flag, p.value, f"{p.allowed} (at {p.path.split(':')[-1]}, with {flag})"))
            continue
        i = int(m.group(1))
        name = listed[i].get("name") if i < len(listed) and isinstance(listed[i], dict) else None
        service = f"services[{i}]" + (f" ({name})" if isinstance(name, str) else "")
        what = f"workload's {m.group(2)}" if m.group(2) else "workload"
        problems.append(Problem(flag, p.value, f"{p.allowed} ({service}'s {what} as {flag} makes it)"))
    return InputError(problems)


def compare(before: StackConfig, after: StackConfig, replications: int, executor: Any = None,
            services: list[str] | None = None, *, stack: str = "", against: str | None = None,
            sets: list[str] | None = None) -> WhatIf:
    """Both sides' gate verdicts (the gate's sequential rule) and, on the same seeds, paired differences per
    METRICS figure over max(`replications`, the replications either verdict took) runs per side."""
    def pick(cfg: StackConfig) -> dict:
        return {t.key: t for t in gate_trials(cfg) if not services or _service(t.key) in services}

    tb, ta = pick(before), pick(after)
    common = [k for k in ta if k in tb]
    if services:
        missing = [s for s in services if s not in {_service(k) for k in common}]
        if missing:
            known = sorted({_service(k) for k in ta})
            raise InputError([Problem("--service", s, "a service with a workload and an SLO on both sides: "
                                      + (", ".join(known) or "none")) for s in missing])
    verdicts = _verdicts([(("before", k), tb[k]) for k in common], [(("after", k), ta[k]) for k in common],
                         before, after, executor)
    counts = {k: max(replications, verdicts["before", k].replications, verdicts["after", k].replications)
              for k in common}
    # Each side's runs on its own gate.seed, so its column rests on its verdict's runs. The same seed on both
    # sides: common random numbers (one batch, a scenario the edits leave alone simulated once); another seed
    # on the after side (--set gate.seed, --against a revision with another): independent runs.
    crn = before.gate.seed == after.gate.seed
    handles = {}   # every scenario of both sides, all sent before any wait
    for n in sorted(set(counts.values())):
        keys = [k for k in common if counts[k] == n]
        sb, sa = replication_seeds(before.gate.seed, n), replication_seeds(after.gate.seed, n)
        handles[n] = (keys, [submit_replications([tb[k].scenario for k in keys] + [ta[k].scenario for k in keys],
                                                 sb, executor, base_dir=ROOT)] if crn else
                      [submit_replications([tb[k].scenario for k in keys], sb, executor, base_dir=ROOT),
                       submit_replications([ta[k].scenario for k in keys], sa, executor, base_dir=ROOT)])
    runs = {}
    for keys, batch in handles.values():
        result = [side for handle in batch for side in handle.result()]
        runs.update({k: (result[i], result[len(keys) + i]) for i, k in enumerate(keys)})
    out = []
    for key in common:
        rb, ra = ([t[key].report(r) for r in side] for t, side in zip((tb, ta), runs[key]))   # the service's reports
        diff = {name: difference(name, rb, ra, paired=crn) for name in METRICS}
        out.append(Comparison(key, verdicts["before", key], verdicts["after", key], (rb, ra), diff,
                              crn and tb[key].scenario == ta[key].scenario,
                              (estimates(rb, METRICS), estimates(ra, METRICS)), crn))
    only = {"before": [str(k) for k in tb if k not in ta], "after": [str(k) for k in ta if k not in tb]}
    most = max(counts.values(), default=replications)
    return WhatIf(stack or after.stack, against, list(sets or []), replications,
                  replication_seeds(before.gate.seed, most), out, only, replication_seeds(after.gate.seed, most),
                  (before.gate.seed, after.gate.seed))


def _verdicts(trials_b: list, trials_a: list, before: StackConfig, after: StackConfig, executor: Any) -> dict:
    """Each side's verdicts as the gate decides them (gate/sequential.py), keyed (side, key). With one gate
    config on both sides one decision runs them, so a scenario the edits leave alone is simulated once."""
    def keyed(pairs: list) -> list:
        return [replace(t, key=key) for key, t in pairs]

    if before.gate == after.gate:
        return Decision(keyed(trials_b + trials_a), before.gate, executor).result()
    first = Decision(keyed(trials_b), before.gate, executor)   # both started before either is awaited
    second = Decision(keyed(trials_a), after.gate, executor)
    return {**first.result(), **second.result()}


def _service(key: Any) -> str:
    return key[0] if isinstance(key, tuple) else str(key)
