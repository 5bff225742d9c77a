"""The tuner: the cheapest settings of one service that pass every gate scenario (`python -m preflight tune`)."""
