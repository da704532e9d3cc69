"""Tool calls that are not shell commands: files, network, messages, databases, unknown tools."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..catalog import catalog
from ..reading import EDITOR_TOOLS, CallReading, PathUse, resolve_path, secrets_in, strings_in
from ..reading import READ_TOOLS as READ_TOOL_NAMES
from .addresses import host_of, is_local
from .findings import DESTRUCTIVE, MODERATE, Findings
from .places import Place, judge_use
from .programs import METADATA, WEBHOOK, inline_code_findings, sql_findings
from .roles import tool_entry
from .vouching import http_request

_PATH_ROLES = frozenset({"read", "list", "write", "delete", "patch", "edits"})
# LangChain's requests toolkit: the method is in the tool's name.
_REQUEST_TOOLS = {"requests_get": "GET", "requests_post": "POST", "requests_put": "PUT", "requests_patch": "PATCH",
                  "requests_delete": "DELETE"}


# Families whose effects are on the machine of the server that runs the tool.
_ACTING_FAMILIES = frozenset({"write", "edit", "patch", "delete", "move", "shell"})
# Tools whose saved text the agent reads back in every later session: instructions that persist.
_PERSISTENT_MEMORY = frozenset({"save_memory", "memory_store", "store_memory", "add_memory", "remember"})


def server_of(tool: str) -> str | None:
    """The MCP server (``mcp__SERVER__tool``) or Goose extension (``SERVER__tool``) of a tool, or None."""
    if not isinstance(tool, str) or "__" not in tool:
        return None
    parts = tool.split("__")
    return parts[-2].lower() if len(parts) >= 2 and parts[-2] else None


def remote_server_findings(reading: CallReading, findings: Findings) -> None:
    """A file, edit, delete or shell tool of a server that is not a known local one acts on another
    machine (``mcp__prod_sftp__delete_file``, ``mcp__prodbox__execute_command``): destructive; its
    file reads are network reads (moderate)."""
    server = server_of(reading.tool)
    if server is None or server in catalog().local_servers:
        return
    if reading.family == "read":
        findings.add(MODERATE, f"reads files on another machine (MCP server `{server}`)")
    if reading.family not in _ACTING_FAMILIES:
        return
    if reading.family == "shell":
        findings.add(DESTRUCTIVE, f"runs commands on another machine (MCP server `{server}`)")
    else:
        findings.add(DESTRUCTIVE, f"writes or deletes files on another machine (MCP server `{server}`)")


def request_findings(reading: CallReading, findings: Findings) -> None:
    """httpie and xh in a shell command: a request that sends data to a webhook posts a message."""
    for run in reading.commands:
        for cmd in run.programs:
            entry = catalog().program(cmd.name) if cmd.argv else None
            if entry is None or entry.operands != "request":
                continue
            _method, url, sends, _files = http_request([w for w in cmd.argv[1:] if not w.startswith("-")])
            if sends and WEBHOOK.search(url):
                findings.add(DESTRUCTIVE, "posts to a webhook (a message to people, or a trigger elsewhere)")


def tool_findings(reading: CallReading, workspace: str | None, findings: Findings) -> None:
    family = reading.family
    args = reading.args
    remote_server_findings(reading, findings)
    launch = args.get("launchOptions")
    if isinstance(launch, Mapping) and any(launch.get(k) for k in ("executablePath", "executable_path")):
        findings.add(DESTRUCTIVE, "starts a program it names (launchOptions.executablePath)")
    if reading.name in _PERSISTENT_MEMORY:
        findings.add(MODERATE, "saves text the agent reads in every later session (instructions that persist)")
    entry = tool_entry(catalog(), reading.tool, args)
    remote = entry is not None and entry.effect in ("remote-write", "sends") or \
        entry is not None and entry.name.startswith("github.")
    dry_run = any(args.get(key) is True for key in ("dryRun", "dry_run", "dryrun", "preview_only"))
    if not dry_run and not remote:   # a remote repository's paths are not this machine's
        for use in reading.paths:
            judge_use(use, workspace, findings)
    method = str(args.get("method", _REQUEST_TOOLS.get(reading.name, "GET"))).upper()
    sends = method not in ("GET", "HEAD", "OPTIONS") or any(args.get(k) not in (None, "", {}, [])
                                                            for k in ("body", "data", "json", "form", "payload"))
    if sends and any(WEBHOOK.search(url) for url in reading.urls):
        findings.add(DESTRUCTIVE, "posts to a webhook (a message to people, or a trigger elsewhere)")
    for url in reading.urls:
        if url.lower().startswith("file://"):
            local = url[7:].split("?", 1)[0]
            judge_use(PathUse(local, resolve_path(local, reading.cwd), "read", via="url"), workspace, findings)
    if family == "read" and not _listing(reading) and any(Place(use, workspace).is_root_or_home
                                                          for use in reading.paths):
        findings.add(DESTRUCTIVE, "searches the contents of the whole home or root (secrets included)")
    if family == "move" and any(Place(use, workspace).is_workspace for use in reading.paths):
        findings.add(DESTRUCTIVE, "moves the whole working directory away")
    if family == "unknown" and reading.name in EDITOR_TOOLS:
        findings.add(MODERATE, f"an editor operation that is not known ({args.get('command')!r})")
    if entry is not None:
        for key, role in entry.args.items():
            if role == "code" and isinstance(args.get(key), str):
                inline_code_findings(args[key], reading.name, reading.cwd, workspace, findings)
    if remote:
        return
    if family in ("read", "network", "message", "database", "unknown"):
        for _where, text in strings_in(args, ""):
            for secret in secrets_in(text):
                findings.add(DESTRUCTIVE, f"sends {secret} off the machine" if family in ("network", "message", "read")
                             else f"passes {secret} to a tool whose effects are not known")
            if METADATA.search(text):
                findings.add(DESTRUCTIVE, "reads the cloud instance's credentials (metadata endpoint)")
    if dry_run:
        return
    if family == "read":
        if reading.name not in READ_TOOL_NAMES and entry is None:
            findings.add(MODERATE, "unknown tool (its name suggests it only reads)")
        return
    if family in ("write", "edit", "patch"):
        if not reading.paths and not (entry is not None and not _PATH_ROLES & set(entry.args.values())):
            findings.add(MODERATE, "writes files (the call names no path)")
        if reading.name.startswith("git_") and reading.name not in ("git_add", "git_commit", "git_create_branch"):
            findings.add(MODERATE, f"changes the repository ({reading.name})")
        return
    if family == "delete":
        if not reading.paths:
            findings.add(MODERATE, "deletes files (the call names no path)")
        return
    if family == "move":
        if any(Place(u, workspace).is_root_or_home for u in reading.paths):
            findings.add(DESTRUCTIVE, "moves system or home directories")
        findings.add(MODERATE, "moves or copies files")
        return
    if family == "network" or reading.name in _REQUEST_TOOLS:
        if method == "DELETE":
            findings.add(DESTRUCTIVE, "deletes a remote resource (HTTP DELETE)")
        if method not in ("GET", "HEAD", "OPTIONS") or any(k in reading.args for k in ("body", "data", "json",
                                                                                        "form")):
            findings.add(MODERATE, f"sends data over the network ({method})")
            elsewhere = [url for url in reading.urls if not is_local(url)]
            if elsewhere or not reading.urls:
                # an effect outside the machine (issue 30): only a request to this machine stays moderate
                where = host_of(elsewhere[0]) if elsewhere else "an address not given"
                findings.add(DESTRUCTIVE, f"sends a request that acts outside the machine ({method} to {where})")
        findings.add(MODERATE, "network access")
        return
    if family == "message":
        findings.add(DESTRUCTIVE, "sends a message to other people")
        return
    if family == "database":
        if not sql_findings(reading.sql, findings):
            findings.add(MODERATE, "database access")
        if any(_EVERY_COLUMN_OF_PEOPLE.search(sql) for sql in reading.sql):
            findings.add(MODERATE, "reads every column of a table of people or secrets (SELECT *) into the agent's "
                                   "context")
        return
    sql_findings(reading.sql, findings)
    if entry is None:
        findings.add(MODERATE, "unknown tool: its effects are not known")
    for use in reading.paths:
        place = Place(use, workspace)
        if use.recursive and (place.is_root_or_home or place.system or not place.inside and not place.temp):
            findings.add(DESTRUCTIVE, "an unknown tool names the home, a system or an outside directory recursively")
        elif place.is_root_or_home:
            findings.add(DESTRUCTIVE, "an unknown tool names the home or root directory")


# SELECT * from a table of people, accounts or secrets: password hashes, tokens and personal data
# come back without being named (issue 19, red team).
_EVERY_COLUMN_OF_PEOPLE = re.compile(
    r"\bselect\s+(\w+\.)?\*\s+from\s+[\w.\"`\[\]]*?\b(users?|accounts?|customers?|members?|people|persons?"
    r"|profiles?|employees?|credentials?|secrets?|tokens?|sessions?|api_?keys?|passwords?|auth\w*)\b", re.I)


_SEARCHERS = frozenset({"grep", "search_file_content", "grep_search", "codebase_search", "search_code",
                        "semantic_search", "file_search"})


def _listing(reading: CallReading) -> bool:
    """A search that returns names or counts, or a tool that only lists (not file contents)."""
    if reading.name not in _SEARCHERS:
        return True
    return reading.args.get("output_mode") in ("files_with_matches", "count")


def hint_findings(hints: Mapping[str, Any], findings: Findings) -> tuple[str, ...]:
    notes: list[str] = []
    if hints.get("destructive") is True or hints.get("destructiveHint") is True:
        findings.add(DESTRUCTIVE, "the agent marks this tool destructive")
        notes.append("the agent says: destructive")
    if hints.get("read_only") is True or hints.get("readOnlyHint") is True:
        notes.append("the agent says: read-only (shown, not trusted)")
    if hints.get("open_world") is True or hints.get("openWorldHint") is True:
        findings.add(MODERATE, "network access (the agent says open-world)")
        notes.append("the agent says: reaches the outside world")
    if hints.get("idempotent") is True or hints.get("idempotentHint") is True:
        notes.append("the agent says: idempotent")
    title = hints.get("title")
    if isinstance(title, str) and title:
        notes.append(f"the tool's title: {title}")
    return tuple(notes)

