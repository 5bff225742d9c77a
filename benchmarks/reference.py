"""The references every benchmark is measured against in the same run.

- `bare_simpy(rate, mean_s, duration_s)`: the ceiling — a bare SimPy loop with callbacks (no processes): each
  request is one arrival timeout and one completion timeout on an infinite-server queue, nothing else. No
  simulator of the same workload on SimPy can do fewer events per request.
- `simfaas(rate, expiry_s, duration_s)`: SimFaaS 0.2.2 (pacslab/simfaas, `pip install -r
  benchmarks/requirements.txt`) on its own scale-per-request scenario: Poisson arrivals, exponential warm
  (mean 2.016 s) and cold (2.163 s) service, idle expiry; None when it is not installed.
Both return (simulated requests, CPU seconds).
"""

from __future__ import annotations

import random
import time

from scenarios import COLD_S, WARM_S


def bare_simpy(rate: float, mean_s: float, duration_s: float, seed: int = 1) -> tuple[int, float]:
    import simpy

    env = simpy.Environment()
    rng = random.Random(seed)
    done = [0]

    def finish(_event) -> None:
        done[0] += 1

    def arrive(_event) -> None:
        env.timeout(rng.expovariate(1.0 / mean_s)).callbacks.append(finish)
        env.timeout(rng.expovariate(rate)).callbacks.append(arrive)

    c = time.process_time()
    env.timeout(rng.expovariate(rate)).callbacks.append(arrive)
    env.run(until=duration_s)
    return done[0], time.process_time() - c


def simfaas(rate: float, expiry_s: float, duration_s: float) -> tuple[int, float] | None:
    try:
        from simfaas.ServerlessSimulator import ServerlessSimulator
    except ImportError:
        return None
    import numpy as np

    np.random.seed(1)
    sim = ServerlessSimulator(arrival_rate=rate, warm_service_rate=1.0 / WARM_S, cold_service_rate=1.0 / COLD_S,
                              expiration_threshold=expiry_s, max_time=duration_s)
    c = time.process_time()
    sim.generate_trace(debug_print=False, progress=False)
    return sim.total_req_count, time.process_time() - c
