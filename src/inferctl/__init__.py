"""inferctl: run, watch, query, benchmark, price and plan self-hosted vLLM serving.

One core with two faces: a CLI for people (``inferctl ...``) and an MCP server for agents
(``inferctl mcp``). See docs/architecture.md for the layers.
"""

__version__ = "0.1.0"
