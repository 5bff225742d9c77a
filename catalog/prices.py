"""EC2 GPU instance prices, $/hour per node, for the tuner's cost (`python -m preflight tune`).

On-demand: the AWS "Amazon EC2 On-Demand Pricing" page (https://aws.amazon.com/ec2/pricing/on-demand/), region
us-east-1, Linux, shared tenancy, as listed in 2025 (PRICE_DATE). Other regions cost up to ~20 % more.
Spot: NOT observed prices. Spot prices move every few minutes per Availability Zone
(https://aws.amazon.com/ec2/spot/pricing/, `aws ec2 describe-spot-price-history`); the figures here are an
estimate, the on-demand price × SPOT_ESTIMATE_RATIO, so the tuner can compare capacity types at all. Put your
own observed figures on the tuner's command line (`--price TYPE=ON_DEMAND[:SPOT]`) before trusting a spot cost.
Instance types without a price here (p4d, p4de, p5, p5e, p5en: AWS changed their prices in 2025) are not
searched by the tuner unless `--price` gives one.
"""

from __future__ import annotations

from dataclasses import dataclass

PRICE_DATE = "2025-06"
SOURCE = "https://aws.amazon.com/ec2/pricing/on-demand/ (Linux, shared tenancy)"
SPOT_ESTIMATE_RATIO = 0.4   # an assumption, not a quote: GPU spot capacity has traded around 30–60 % of on-demand


@dataclass(frozen=True)
class Price:
    on_demand: float          # $/h per node
    spot: float               # $/h per node (estimate unless the stack config gives one)
    source: str = SOURCE
    date: str = PRICE_DATE

    def per_hour(self, capacity_type: str) -> float:
        return self.spot if capacity_type == "SPOT" else self.on_demand


_ON_DEMAND = {
    "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448, "g5.16xlarge": 4.096,
    "g5.12xlarge": 5.672, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288,
    "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144, "g6.16xlarge": 3.3968,
    "g6.12xlarge": 4.6016, "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504,
    "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208, "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856,
    "g6e.16xlarge": 7.57719, "g6e.12xlarge": 10.49264, "g6e.24xlarge": 15.06559, "g6e.48xlarge": 30.13118,
}

PRICES: dict[str, Price] = {name: Price(od, round(od * SPOT_ESTIMATE_RATIO, 4)) for name, od in _ON_DEMAND.items()}
