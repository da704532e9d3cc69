"""Previews for tool calls that arrive without one, derived from recognisable arguments.

Most agents never send a ``preview``, but their tools look alike: Claude Code's ``Write`` /
``Edit`` / ``MultiEdit`` / ``Bash``, Anthropic's text editor tool, Codex's ``shell`` and
``apply_patch``, MCP filesystem servers' ``write_file`` / ``edit_file``. :func:`preview_for`
turns such a call into the same wire-format preview an agent could have sent, so the person sees
a diff or a highlighted command instead of raw JSON. The arguments are shown as well, always.

The app runs as the same user on the same machine as the agents, so for writes and edits it
reads the file's current text (only a regular file below 2 MiB that decodes as UTF-8, and only
when the path is absolute or a working directory is known) to show a real diff. It never
follows that read with a write, and a missing or unreadable file simply gives a smaller preview.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Mapping
from typing import Any

from ..core.calls import reading

MAX_READ_BYTES = 2 * 1024 * 1024

RECOGNISED: dict[str, dict[str, tuple[str, ...]]] = {
    "file_write": {"tools": tuple(sorted(reading.FILE_WRITE_TOOLS)), "path": reading.PATH_ARGS,
                   "content": reading.CONTENT_ARGS},
    "diff (edit)": {"tools": tuple(sorted(reading.EDIT_TOOLS)), "path": reading.PATH_ARGS, "old": reading.OLD_ARGS,
                    "new": reading.NEW_ARGS, "edits": ("edits",), "replace_all": ("replace_all",),
                    "text editor": (reading.EDITOR_VERB_ARG, reading.EDITOR_TEXT_ARG, reading.EDITOR_INSERT_LINE_ARG)},
    "diff (patch)": {"tools": tuple(sorted(reading.PATCH_TOOLS)), "patch": reading.PATCH_ARGS,
                     "path": reading.PATH_ARGS},
    "command": {"tools": tuple(sorted(reading.SHELL_TOOLS)), "command": reading.SHELL_ARGS,
                "cwd": reading.CWD_ARGS},
}
"""Tool names (matched case-insensitively, after dropping an MCP ``mcp__server__`` prefix) and
the argument names read for each preview kind: :mod:`desktop_approver.core.calls.reading`'s vocabulary."""


def preview_for(tool: str, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any] | None:
    """A wire-format preview for a recognisable call, or ``None`` when nothing fits.

    ``cwd`` is the agent's working directory, used to find relative paths (and as the command's
    directory when the call names none).
    """
    if not isinstance(args, Mapping):
        return None
    call = reading.read_call(tool, args, cwd)
    if call.family == "shell":
        return _command(call, cwd)
    if call.family == "patch":
        return _patch(call)
    if call.family == "write":
        return _write(call, cwd)
    if call.family == "edit":
        return _edit(call, cwd)
    return None


def normalise_tool_name(tool: str) -> str:
    """``mcp__filesystem__write_file`` → ``write_file``; ``Bash`` → ``bash``."""
    return reading.normalise_tool(tool)


# -- kinds --------------------------------------------------------------------------------------

def _command(call: reading.CallReading, cwd: str | None) -> dict[str, Any] | None:
    run = call.command
    if run is None:
        return None
    preview: dict[str, Any] = {"kind": "command"}
    if run.argv is not None:
        preview["argv"] = list(run.argv)
    else:
        preview["command"] = run.text
    workdir = call.extra_cwd or cwd
    if workdir:
        preview["cwd"] = workdir
    return preview


def _patch(call: reading.CallReading) -> dict[str, Any] | None:
    text = call.patch
    if not isinstance(text, str) or not text.strip():
        return None
    if text.lstrip().startswith("*** Begin Patch"):
        text = codex_patch_to_unified(text)
    elif "@@" not in text and "Binary files" not in text and "GIT binary patch" not in text:
        return None
    preview: dict[str, Any] = {"kind": "diff", "unified": text}
    path = _path(call)
    if path is not None:
        preview["path"] = path
    return preview


def _path(call: reading.CallReading) -> str | None:
    value = next((call.args[key] for key in reading.PATH_ARGS if key in call.args), None)
    return value if isinstance(value, str) else None


def _write(call: reading.CallReading, cwd: str | None) -> dict[str, Any] | None:
    path = _path(call)
    if path is None or call.content is None:
        return None
    return {"kind": "file_write", "path": path, "content": call.content, "old": read_text(path, cwd)}


def _edit(call: reading.CallReading, cwd: str | None) -> dict[str, Any] | None:
    path = _path(call)
    if path is None:
        return None
    args = call.args
    command = args.get(reading.EDITOR_VERB_ARG)
    text = args.get(reading.EDITOR_TEXT_ARG)
    if command == "create" and isinstance(text, str):
        return {"kind": "file_write", "path": path, "content": text, "old": read_text(path, cwd)}
    if command in ("view", "undo_edit"):
        return None
    current = read_text(path, cwd)
    inserted = args.get(reading.EDITOR_INSERT_TEXT_ARG)
    if command == "insert" and isinstance(inserted, str):
        return _insert(path, current, args.get(reading.EDITOR_INSERT_LINE_ARG), inserted)
    edits = list(call.edits)
    if not edits:
        if call.patch:
            return _patch(call)
        return None
    if current is not None:
        changed = current
        for old, new, replace_all in edits:
            if not old or old not in changed:
                break
            changed = changed.replace(old, new) if replace_all else changed.replace(old, new, 1)
        else:
            return {"kind": "diff", "path": path, "old": current, "new": changed}
    # The file is unknown or the text to replace is not in it: show each edit on its own.
    if len(edits) == 1:
        return {"kind": "diff", "path": path, "old": edits[0][0], "new": edits[0][1]}
    return {"kind": "diff", "path": path, "unified": _edits_as_unified(path, edits)}


def _insert(path: str, current: str | None, line: Any, text: str) -> dict[str, Any]:
    if current is None or not isinstance(line, int) or line < 0:
        return {"kind": "diff", "path": path, "old": "", "new": text}
    lines = current.split("\n")
    at = min(line, len(lines))
    addition = text if text.endswith("\n") or at == len(lines) else text + "\n"
    before = "\n".join(lines[:at])
    changed = before + ("\n" if at else "") + addition + "\n".join(lines[at:])
    return {"kind": "diff", "path": path, "old": current, "new": changed}


def _edits_as_unified(path: str, edits: list[tuple[str, str, bool]]) -> str:
    """Each edit as its own hunk; line numbers count within the edited fragment."""
    parts = [f"--- a/{path}", f"+++ b/{path}"]
    for number, (old, new, _all) in enumerate(edits, 1):
        body = list(difflib.unified_diff(_keep_ends(old), _keep_ends(new), n=max(len(old), len(new))))
        for line in body[2:]:
            line = line.rstrip("\n")
            if line.startswith("@@"):
                line += f" edit {number} of {len(edits)}"
            parts.append(line)
    return "\n".join(parts) + "\n"


def _keep_ends(text: str) -> list[str]:
    return [line + "\n" for line in text.split("\n")]


def codex_patch_to_unified(text: str) -> str:
    """Codex's ``*** Begin Patch`` format as a unified diff.

    Added files get real line numbers; an update's hunks carry none (the format has none), so
    they become ``@@`` headers without ranges, which the diff parser accepts.
    """
    sections: list[dict[str, Any]] = []
    for line in text.split("\n"):
        header = next(((kind, line[len(prefix):].strip()) for prefix, kind in _CODEX_HEADERS
                       if line.startswith(prefix)), None)
        if header:
            sections.append({"kind": header[0], "path": header[1], "to": None, "hunks": []})
        elif not sections or line.startswith(("*** Begin Patch", "*** End Patch", "*** End of File")):
            continue
        elif line.startswith("*** Move to: "):
            sections[-1]["to"] = line[len("*** Move to: "):].strip()
        elif line.startswith("@@"):
            sections[-1]["hunks"].append([line.strip("@ ").strip(), []])
        elif line[:1] in ("+", "-", " "):
            if not sections[-1]["hunks"]:
                sections[-1]["hunks"].append(["", []])
            sections[-1]["hunks"][-1][1].append(line)
    out: list[str] = []
    for section in sections:
        path, to = section["path"], section["to"] or section["path"]
        out.append(f"diff --git a/{path} b/{to}")
        if section["kind"] == "add":
            lines = [line for _h, body in section["hunks"] for line in body]
            out += ["new file mode 100644", "--- /dev/null", f"+++ b/{path}", f"@@ -0,0 +1,{len(lines)} @@"]
            out += lines
        elif section["kind"] == "delete":
            out += ["deleted file mode 100644", f"--- a/{path}", "+++ /dev/null"]
        else:
            out += [f"--- a/{path}", f"+++ b/{to}"]
            for context, body in section["hunks"]:
                out.append(f"@@ {context}".rstrip())
                out += body
    return "\n".join(out) + "\n"


_CODEX_HEADERS = (("*** Add File: ", "add"), ("*** Delete File: ", "delete"),
                  ("*** Update File: ", "update"))


# -- reading the current file -------------------------------------------------------------------

def read_text(path: str, cwd: str | None) -> str | None:
    """The current text of a regular file below 2 MiB, or ``None`` (missing, binary, elsewhere).

    Opened non-blocking and checked with ``fstat`` so a FIFO or a device named by an agent can
    neither hang the app nor be read.
    """
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        if not cwd:
            return None
        path = os.path.join(cwd, path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
            return None
        data = b""
        while len(data) <= MAX_READ_BYTES:
            chunk = os.read(fd, MAX_READ_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_READ_BYTES or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def recognised_markdown() -> str:
    """The section of PROTOCOL.md that lists what :func:`preview_for` recognises."""
    lines = ["## Previews derived from arguments", "",
             "A request without a `preview` still gets one when its tool and arguments are "
             "recognisable. Tool names match case-insensitively, after dropping an MCP "
             "`mcp__<server>__` prefix; argument names match in any spelling (`CommandLine`, `commandLine` "
             "and `command_line` are `command_line`); the first argument name present wins.", "",
             "| preview | tools | arguments |", "|---|---|---|"]
    for kind, spec in RECOGNISED.items():
        tools = ", ".join(f"`{t}`" for t in spec["tools"])
        arguments = "; ".join(f"{role}: " + " \\| ".join(f"`{a}`" for a in names)
                              for role, names in spec.items() if role != "tools")
        lines.append(f"| {kind} | {tools} | {arguments} |")
    lines += ["", "- A write (`file_write`) and an edit read the file's current text to show a "
              "real diff, when the path is absolute or the agent's `cwd` is known, the file is "
              "regular, below 2 MiB and UTF-8 text; otherwise the write shows as new content and "
              "each edit shows its own old → new fragment.",
              "- The text editor tools' `command`: `create` is a write, `str_replace` and `insert` "
              "are edits, `view` and `undo_edit` get no preview.",
              "- A patch is a unified diff (`git diff`, `diff -u`) or Codex's "
              "`*** Begin Patch` format.",
              "- A command is a string (`command`) or an argv list (Codex's "
              "`[\"bash\", \"-lc\", \"...\"]`); its directory is the call's `cwd`/`workdir`, "
              "else the agent's.", ""]
    return "\n".join(lines)
