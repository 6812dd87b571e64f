"""The built-in demo agent (no LLM, no API key)."""

from .agent import create_demo_agent

__all__ = ["create_demo_agent"]
