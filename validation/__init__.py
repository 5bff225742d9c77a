"""Checking what users hand us: typed, path-aware readers with errors that name key, value and what is allowed
(`fields`, `errors`), and Kubernetes manifests against their schemas (`kubernetes`)."""
