"""vLLM V1 skips the waiting queue only in a step that preempted (`vllm/v1/core/sched/scheduler.py:
Scheduler.schedule`: `if not preempted_reqs:` guards the WAITING loop); the next step admits the victim again
if its first recompute chunk fits. The model used to run the segment planned in the preempting step for k
identical steps with the waiting queue closed, so the victim waited for the whole segment (72 steps here)."""

import gpu_fakes
from gpu_fakes import Log, req


def test_the_victim_is_readmitted_the_step_after_its_preemption():
    # Budget 32 chunks the recompute: after B's preemption A decodes alone (context ~147); B's first chunk
    # (31 tokens: the budget less A's decode) fits at once (147 + 1 + 31 + 8 ≤ 300), so the step after the
    # preempting one readmits B.
    env, pod, s = gpu_fakes.make("vllm", {"model": "llama-3-8b", "gpu": "A100-80GB", "max_num_seqs": 4,
                                          "max_num_batched_tokens": 32})
    s.cap = 300
    log = Log(env)
    plans = []  # (decode steps so far, preemptions so far, B running) at each segment's start
    start = s._start

    def record(*args):
        plans.append((s.steps, s.stats["preemptions"], any(r.req.id == 2 for r in s.running)))
        return start(*args)

    s._start = record
    s.submit(req(1, 100, 120), log)
    s.submit(req(2, 100, 120), log)
    env.run()
    i = next(i for i, p in enumerate(plans) if p[1] == 1)
    steps, _, running = plans[i]
    assert not running  # the preempting step admits nobody (this part holds today)
    assert plans[i + 1][0] == steps + 1 and plans[i + 1][2], plans[i:i + 2]  # fails: B waits until A is done
