"""One suggestion of `preflight check`'s advice (preflight/advice.py): why, and the `--set` edits to try, printed as
the `preflight whatif` command that tests them; and the rounding of the values it proposes, as a person would type
them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from stackconfig.schema import ServiceConfig


@dataclass(frozen=True)
class Tip:
    """One suggestion: why, and the `(path, value)` edits to try (paths under the service, or `gpuNodeGroup.…`)."""

    why: str
    edits: tuple[tuple[str, object], ...]

    def sets(self, svc: ServiceConfig) -> list[str]:
        return [f"{'' if p.startswith('gpuNodeGroup') else f'services.{svc.name}.'}{p}={v}" for p, v in self.edits]

    def command(self, stack: str, svc: ServiceConfig) -> str:
        return f"{self.why}: python -m preflight whatif --stack {stack} " + " ".join(
            f"--set '{s}'" for s in self.sets(svc))

    @classmethod
    def of(cls, why: str, path: str, value: object, *also: tuple[str, object]) -> "Tip":
        return cls(why, ((path, value), *also))


def round_up(x: float) -> float | int:
    """`x` rounded up to 2 significant figures, for a proposed value a person would type."""
    if x <= 0:
        return x
    step = 10 ** (math.floor(math.log10(x)) - 1)
    out = float(f"{math.ceil(x / step) * step:.6g}")
    return int(out) if out.is_integer() else out


def round_down(x: float) -> int:
    """`x` rounded down to 2 significant figures (at least 1), for a proposed cap a person would type."""
    if x < 1:
        return 1
    step = 10 ** max(0, math.floor(math.log10(x)) - 1)
    return max(1, int(x // step * step))
