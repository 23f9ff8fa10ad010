"""Deployment profiles as data: the profile model and its loading (``profile``), the `vllm serve` argv and
the pre-flight checks (``serve``), and the serving configuration the planner reads (``serving``).

Below both of its users: ``cloud/`` deploys a profile and ``plan/`` sizes one; this package imports
neither (the import-linter contracts in pyproject.toml keep it so).
"""
