"""Platform policy checks (issue 5): rules in `policy.rules`, the CrossGuard pack in `policy.pack` (constructed by
`policy/__main__.py` when the Pulumi CLI runs it), the report in `policy.report`. See docs/policy.md."""
