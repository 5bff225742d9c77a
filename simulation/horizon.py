"""What is still open when a run stops (`duration_s + drain_s`): requests never answered, pods never Ready.

Requests. An attempt still in the activator's queue, a queue-proxy's queue or on a model server, and a user
request whose client is backing off before a retry, got no answer within `duration_s + drain_s`; its client
would see a timeout. Each becomes its user request's final outcome, status `unanswered`
(`request.UNANSWERED`), component where it waited (activator, queue-proxy, server; `client-backoff`), its
latency counted to the horizon (a lower bound), so it is in `requests`, `status_counts` and every error rate.
A run that drains fully has none, and its report is what it was.

Pods. A pod created during the run and still Pending or starting at the horizon is a censored cold start: its
time to Ready is more than its wait so far (horizon − created), `Sim.cold_censored` (report:
`cold_start_censored`); a censored wait longer than `maxColdStartS` is a certain miss
(simulation/report_terms.py, `longest_cold_start`). A pod deleted before it was ever Ready is not one: nothing
waited on it any more.

Nothing runs after the horizon: the autoscaler's scrapes are not caught up while the requests are answered.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from simulation.pod import PENDING, STARTING
from simulation.request import ACTIVATOR, CLIENT_BACKOFF, UNANSWERED, Request


def close(sim: Any) -> None:
    """Record what is open at the horizon (now): censored cold starts, then unanswered requests."""
    now = sim.env.now
    for pod in sim.pods:
        if not pod.warm and pod.ready_t < 0 and pod.state in (PENDING, STARTING):
            sim.cold_censored.append(now - pod.created)
    if sim.busy:
        sim.scrape_due = math.inf   # Pod.leave would catch the KPA's scrapes up (and maybe scale)
        answer_unanswered(sim)


def answer_unanswered(sim: Any) -> None:
    """Every attempt in flight and every pending retry of `sim` answered `unanswered` now (none is retried)."""
    act = sim.activator
    if act is not None and act.nwait:
        waiting, act.waiting = act.waiting, deque()   # emptied first: answering one must not move the next
        act.nwait = 0
        for req in waiting:
            if not req.status:
                req.where = None
                sim.complete(req, UNANSWERED, ACTIVATOR)
    for pod in list(sim.pods):
        if pod.n:
            pod.qp.fail_all(UNANSWERED)   # the server's requests (component server), then its queue (queue-proxy)
    client = sim.client
    if client.backing_off:
        owner = client.sim   # a fleet's new revision shares the old one's client: its records are the old one's
        now = sim.env.now
        for prev in client.backing_off.values():
            req = Request(owner._rid, prev.origin, prev.origin_t, prev.attempt + 1, now, prev.input_tokens,
                          prev.output_tokens, prev.measured)
            owner._rid += 1
            req.status, req.component, req.t_done = UNANSWERED, CLIENT_BACKOFF, now
            owner.rec.record(req, True)
            owner.timeline.final(req)
        client.backing_off.clear()
