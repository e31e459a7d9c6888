"""A portable conformance runner for agentprocess (core-2) servers: it speaks only the protocol."""

__version__ = "0.1.0"
