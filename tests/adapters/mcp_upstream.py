"""A real MCP server over stdio for the gate's tests: notes kept as files in the folder given."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

FOLDER = Path(sys.argv[1])
server = MCPServer("notes")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_file(path: str) -> str:
    """Read a note."""
    path = FOLDER / path
    return path.read_text() if path.exists() else "(no such note)"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
def write_file(path: str, text: str) -> str:
    """Write (replace) a note."""
    (FOLDER / path).write_text(text)
    return f"wrote {len(text)} characters to {path}"


@server.resource("notes://readme")
def readme() -> str:
    """How the notes are kept."""
    return "one file per note"


@server.prompt()
def summarise(name: str) -> str:
    """Ask for a summary of a note."""
    return f"Summarise the note {name}."


if __name__ == "__main__":
    server.run()
