"""Tool calls that are not shell commands: files, network, messages, databases, unknown tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..reading import READ_TOOLS as READ_TOOL_NAMES
from ..reading import CallReading, secrets_in, strings_in
from .findings import DESTRUCTIVE, MODERATE, Findings
from .places import Place, judge_use
from .programs import METADATA, sql_findings


def tool_findings(reading: CallReading, workspace: str | None, findings: Findings) -> None:
    family = reading.family
    args = reading.args
    dry_run = any(args.get(key) is True for key in ("dryRun", "dry_run", "dryrun", "preview_only"))
    if not dry_run:
        for use in reading.paths:
            judge_use(use, workspace, findings)
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
        if reading.name not in READ_TOOL_NAMES:
            findings.add(MODERATE, "unknown tool (its name suggests it only reads)")
        return
    if family in ("write", "edit", "patch"):
        if not reading.paths:
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
    if family == "network":
        method = str(reading.args.get("method", "GET")).upper()
        if method == "DELETE":
            findings.add(DESTRUCTIVE, "deletes a remote resource (HTTP DELETE)")
        if method not in ("GET", "HEAD", "OPTIONS") or any(k in reading.args for k in ("body", "data", "json",
                                                                                        "form")):
            findings.add(MODERATE, f"sends data over the network ({method})")
        findings.add(MODERATE, "network access")
        return
    if family == "message":
        findings.add(MODERATE, "sends a message to people")
        return
    if family == "database":
        if not sql_findings(reading.sql, findings):
            findings.add(MODERATE, "database access")
        return
    sql_findings(reading.sql, findings)
    findings.add(MODERATE, "unknown tool: its effects are not known")
    for use in reading.paths:
        place = Place(use, workspace)
        if use.recursive and (place.is_root_or_home or place.system or not place.inside and not place.temp):
            findings.add(DESTRUCTIVE, "an unknown tool names the home, a system or an outside directory recursively")
        elif place.is_root_or_home:
            findings.add(DESTRUCTIVE, "an unknown tool names the home or root directory")


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

