"""Adapters that plug the app into agent frameworks, one module per framework.

Each module imports its framework when it is imported itself, never before, and is installed with
an extra of the framework's name (``pip install 'desktop-approver[pydantic-ai]'``)::

    desktop_approver.adapters.pydantic_ai       PydanticAI
    desktop_approver.adapters.openai_agents     OpenAI Agents SDK
    desktop_approver.adapters.langchain         LangChain v1 / LangGraph
    desktop_approver.adapters.agent_framework   Microsoft Agent Framework
    desktop_approver.adapters.claude_agent_sdk  Claude Agent SDK
    desktop_approver.adapters.crewai            CrewAI
    desktop_approver.adapters.mcp               an MCP gate in front of any MCP server

This package itself imports nothing but :mod:`.base` on demand: ``import desktop_approver`` never
imports an adapter, and an adapter never imports Qt or the app's core.
"""

from __future__ import annotations
