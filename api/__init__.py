"""The doors the agents come through: the tools over REST and over MCP, and the OpenAPI document.

They translate only: every tool call goes to runs.tools.call_tool, and every answer is its result
or its error, in the door's own envelope.
"""
