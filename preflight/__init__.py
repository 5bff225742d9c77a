"""`python -m preflight check`: the offline preflight report of a stack (config, program, manifests, policies,
SLO gate)."""
