"""What simulation/gpu/roofline.py and docs/gpu-model.md say the default roofline gives a 7–8B model at batch 1:
ITL inside the priors of ../shared/reference/gpu-memory-and-models.md, TTFT (a 256-token prompt's prefill) about
3–7× below them. If the defaults move, the figures quoted there must move with them."""

import pytest

from catalog import DEFAULT
from simulation.gpu.roofline import decode_step_time, prefill_time

LLAMA = DEFAULT.models["llama-3-8b"]
PRIORS = {  # GPU: (TTFT ms, ITL ms) ranges, llm-d-inference-sim latency profiles (secondary)
    "H100-80GB": ((60, 120), (10, 15)), "A100-80GB": ((100, 180), (15, 25)), "L40S": ((180, 280), (25, 35))}
QUOTED = {"H100-80GB": (18, 11), "A100-80GB": (36, 16), "L40S": (41, 34)}   # the docstring's ms


@pytest.mark.parametrize("gpu", sorted(PRIORS))
def test_itl_is_in_the_priors_and_ttft_below_them_as_quoted(gpu):
    (t_lo, t_hi), (i_lo, i_hi) = PRIORS[gpu]
    ttft = prefill_time(LLAMA, DEFAULT.gpus[gpu], 256) * 1e3
    itl = decode_step_time(LLAMA, DEFAULT.gpus[gpu], 1, 256 + 64) * 1e3
    assert (int(ttft + 0.5), int(itl + 0.5)) == QUOTED[gpu]
    assert i_lo <= itl <= i_hi
    assert 2.5 <= t_lo / ttft and t_hi / ttft <= 7   # "about 3–7× below"


def test_the_docs_quote_the_same_figures():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    doc = (root / "simulation/gpu/roofline.py").read_text()
    assert "18, 36 and 41 ms" in doc and "11, 16 and 34 ms" in doc
    assert "18, 36, 41 ms against 60–120" in (root / "docs/gpu-model.md").read_text()
