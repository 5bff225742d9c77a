"""Autoscalers: Knative KPA (pure decider + SimPy 2 s tick) and the Kubernetes HPA (pure + 15 s sync)."""
