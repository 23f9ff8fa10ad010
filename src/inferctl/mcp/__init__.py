"""The MCP face of inferctl (`inferctl mcp`): see server.py, and docs/mcp.md for clients and safety."""
