"""What a tool call does, read once: the one place that knows tool names and argument names.

Risk, policy, the automatic previews, the command highlighter and the review panel all see a
call through :func:`read_call`, so they cannot disagree about which command runs, which files
it touches or which characters hide in it. ``Bash {"argv": ["rm", "-rf", "x"]}``,
``{"script": "rm -rf x"}`` and ``{"command": "rm -rf x"}`` read the same.

A :class:`CallReading` holds:

- ``family``: ``shell``, ``read``, ``write``, ``edit``, ``patch``, ``move``, ``delete``,
  ``network``, ``database``, ``message`` or ``unknown``;
- ``commands``: each shell command line the call runs (given as a string or as an argv, under
  any of the argument names agents use, spelled any way: every one, when a call gives several),
  with the programs :mod:`.shellparse` finds in it;
- ``paths``: every path it touches, with ``read`` / ``write`` / ``delete`` (and whether
  recursively), ``~`` and ``$HOME`` expanded to the home directory (the agents run as the app's
  own user) and relative paths resolved against the working directory;
- ``urls``, ``payloads`` (text the call sends) and ``sql`` (statements it runs);
- ``hidden``: characters that could make what is shown differ from what runs, by kind.

Standard library only; nothing here judges: :mod:`.risk` does.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from .catalog import catalog_generation
from .grammar import parse
from .shellparse import SHELLS, ReadBudget, SimpleCommand, over_budget, split_commands

__all__ = [
    "FAMILIES", "CallReading", "ShellRun", "PathUse", "Hidden", "read_call", "normalise_tool", "resolve_path",
    "command_paths", "hidden_in", "shell_text", "secrets_in", "read_command", "known_name", "aliases_of",
    "respelled_names",
    "BIDI", "ZERO_WIDTH", "ODD_SPACES", "CONTROL",
]

Family = Literal["shell", "read", "write", "edit", "patch", "move", "delete", "network", "database", "message",
                 "unknown"]
FAMILIES: tuple[str, ...] = ("shell", "read", "write", "edit", "patch", "move", "delete", "network", "database",
                             "message", "unknown")
Operation = Literal["read", "write", "delete"]

# -- the vocabulary: tool names (lower case, after an MCP ``mcp__server__`` prefix) -----------------

SHELL_TOOLS = frozenset({"bash", "shell", "sh", "run_command", "execute_command", "terminal", "run_shell_command",
                         "run_terminal_cmd", "exec_command", "local_shell", "command", "exec", "run",
                         "shell_command", "container.exec", "execute", "run_in_terminal", "powershell"})
READ_TOOLS = frozenset({"read", "read_file", "read_text_file", "read_media_file", "read_multiple_files", "view",
                        "cat", "open", "get_file_info", "file_info", "glob", "grep", "search", "search_files",
                        "find_files", "list", "ls", "list_directory", "list_dir", "list_files",
                        "list_directory_with_sizes", "directory_tree", "list_allowed_directories",
                        "todowrite", "todoread", "think", "notebookread", "codebase_search", "view_file",
                        "git_status", "git_diff", "git_diff_staged", "git_diff_unstaged", "git_log", "git_show",
                        "git_branch", "list_tables", "describe_table", "read_resource", "list_resources",
                        "file_search", "grep_search", "semantic_search", "find_by_name", "view_code_item",
                        "search_code", "read_notebook", "list_code_definition_names", "search_and_replace_preview"})
FILE_WRITE_TOOLS = frozenset({"write", "write_file", "create_file", "file_write", "append_file", "notebookedit"})
WRITE_TOOLS = FILE_WRITE_TOOLS | frozenset({"create_directory", "mkdir", "git_add", "git_commit", "git_create_branch",
                                            "git_checkout", "git_reset", "git_init", "create_table", "todo_write"})
EDIT_TOOLS = frozenset({"edit", "edit_file", "multiedit", "multi_edit", "str_replace_editor",
                        "str_replace_based_edit_tool", "replace_in_file", "search_replace"})
PATCH_TOOLS = frozenset({"apply_patch", "patch", "apply_diff"})
MOVE_TOOLS = frozenset({"move", "move_file", "rename", "rename_file", "copy_file", "cp", "mv", "copy"})
DELETE_TOOLS = frozenset({"delete", "delete_file", "remove", "remove_file", "rm", "unlink", "delete_directory",
                          "remove_directory", "rmdir", "trash", "fs_remove", "remove_path", "delete_path"})
NETWORK_TOOLS = frozenset({"requests_get", "requests_post", "requests_put", "requests_patch", "requests_delete",
                           "webfetch", "web_fetch", "fetch", "http_request", "browse", "browser", "curl",
                           "http_get", "http_post", "download", "post", "request", "api_request", "navigate",
                           "websearch", "web_search", "slack_list_channels", "slack_get_channel_history",
                           "slack_get_thread_replies", "slack_get_users", "slack_get_user_profile", "get_issue",
                           "list_issues", "get_pull_request", "list_pull_requests", "search_repositories",
                           "search_issues", "get_file_contents", "list_commits"})
DATABASE_TOOLS = frozenset({"read_query", "write_query", "query", "sql", "execute_sql", "run_query", "run_sql",
                            "execute_query", "db_query", "sqlite", "postgres_query", "mysql_query"})
MESSAGE_TOOLS = frozenset({"send_email", "send_mail", "email", "slack_post_message", "slack_reply_to_thread",
                           "post_message", "send_message", "sms", "send_sms", "tweet", "notify", "chat_post",
                           "discord_send", "telegram_send", "create_issue", "add_issue_comment", "update_issue",
                           "create_pull_request", "create_pull_request_review", "add_comment", "post_comment",
                           "create_or_update_file", "push_files", "create_gist", "create_repository"})

_FAMILY_OF_TOOL: dict[str, Family] = {
    **dict.fromkeys(SHELL_TOOLS, "shell"), **dict.fromkeys(READ_TOOLS, "read"),
    **dict.fromkeys(WRITE_TOOLS, "write"), **dict.fromkeys(EDIT_TOOLS, "edit"), **dict.fromkeys(PATCH_TOOLS, "patch"),
    **dict.fromkeys(MOVE_TOOLS, "move"), **dict.fromkeys(DELETE_TOOLS, "delete"),
    **dict.fromkeys(NETWORK_TOOLS, "network"), **dict.fromkeys(DATABASE_TOOLS, "database"),
    **dict.fromkeys(MESSAGE_TOOLS, "message"),
}
# Words in an unknown tool's name, checked in this order (the most harmful first): a guess that
# names the family in the dialog; the risk of an unknown tool never drops to safe on a name.
_NAME_WORDS: tuple[tuple[Family, frozenset[str]], ...] = (
    ("delete", frozenset({"delete", "remove", "rm", "unlink", "rmdir", "erase", "trash", "purge", "destroy", "clean",
                          "cleanup", "wipe", "prune", "clear"})),
    ("database", frozenset({"sql", "query", "db", "database"})),
    ("message", frozenset({"email", "mail", "message", "slack", "chat", "sms", "tweet", "discord", "telegram"})),
    ("network", frozenset({"http", "https", "fetch", "url", "download", "upload", "web", "browse", "api"})),
    ("move", frozenset({"move", "rename", "copy", "mv", "cp"})),
    ("write", frozenset({"write", "edit", "create", "patch", "replace", "insert", "append", "save", "put",
                         "update", "mkdir", "set"})),
    ("read", frozenset({"read", "view", "cat", "open", "list", "ls", "get", "search", "grep", "glob", "find",
                        "stat", "show", "describe"})),
)

# -- the vocabulary: argument names ----------------------------------------------------------------

SHELL_ARGS = ("command", "cmd", "argv", "script", "commands", "code_to_run", "shell_command", "command_line")
PATH_ARGS = ("file_path", "path", "absolute_path", "filename", "filepath", "file", "target_file", "notebook_path",
             "directory", "dir", "repo_path", "folder", "target")
LIST_PATH_ARGS = ("paths", "files", "file_paths")
SOURCE_ARGS = ("source", "src", "from", "old_path", "source_path")
DESTINATION_ARGS = ("destination", "dest", "to_path", "new_path", "target_path", "destination_path")
CONTENT_ARGS = ("content", "contents", "file_text", "text", "new_source")
OLD_ARGS = ("old_string", "old_str", "oldText", "old_text")
NEW_ARGS = ("new_string", "new_str", "newText", "new_text")
PATCH_ARGS = ("patch", "diff", "input", "unified_diff")
CWD_ARGS = ("cwd", "workdir", "working_directory", "workingDirectory")
URL_ARGS = ("url", "uri", "endpoint", "href", "link", "webhook", "webhook_url")
BODY_ARGS = ("body", "data", "json", "payload", "text", "message", "content", "params", "form", "html",
             "subject", "blocks", "attachments")
HEADER_ARGS = ("headers", "header", "auth", "authorization", "cookies")
SQL_ARGS = ("sql", "query", "statement", "statements")
RECIPIENT_ARGS = ("to", "cc", "bcc", "recipient", "recipients", "channel", "channel_id", "chat_id", "user_id")
RECURSIVE_ARGS = ("recursive", "recurse", "rf", "force_recursive")
# Anthropic's text editor tool (str_replace_editor): a verb in "command", not a shell command.
EDITOR_VERB_ARG, EDITOR_TEXT_ARG, EDITOR_INSERT_LINE_ARG, EDITOR_INSERT_TEXT_ARG = (
    "command", "file_text", "insert_line", "new_str")
_NOT_SHELL_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "write"})
# Editor tools whose sub-operation sits in ``command`` (Anthropic's text editor, OpenHands,
# Goose's developer__text_editor): the family follows the operation, and ``command`` is never a
# shell command line, whatever it holds.
EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor", "file_editor",
                          "editor"})
# Tools that run code given in an argument (``script``, ``code``, ``query``): never a shell command.
CODE_TOOLS = frozenset({"python_repl", "pythonrepl", "python_repl_ast", "execute_python", "execute_ipython_cell",
                        "execute_code",
                        "run_code", "code_interpreter", "evaluate", "browser_evaluate", "puppeteer_evaluate",
                        "playwright_evaluate", "run_javascript", "execute_javascript", "eval"})
EDITOR_FAMILIES: dict[str, Family] = {"view": "read", "create": "write", "write": "write", "str_replace": "edit",
                                      "insert": "edit", "undo_edit": "edit"}
_KNOWN_NAMES = frozenset((*SHELL_ARGS, *PATH_ARGS, *LIST_PATH_ARGS, *SOURCE_ARGS, *DESTINATION_ARGS, *CONTENT_ARGS,
                          *OLD_ARGS, *NEW_ARGS, *PATCH_ARGS, *CWD_ARGS, *URL_ARGS, *BODY_ARGS, *HEADER_ARGS, *SQL_ARGS,
                          *RECIPIENT_ARGS, *RECURSIVE_ARGS, "edits", "replace_all", "method", "action"))
_KNOWN_BY_SQUASH: dict[str, str] = {}
for _name in (*SHELL_ARGS, *PATH_ARGS, *LIST_PATH_ARGS, *SOURCE_ARGS, *DESTINATION_ARGS, *CONTENT_ARGS, *OLD_ARGS,
              *NEW_ARGS, *PATCH_ARGS, *CWD_ARGS, *URL_ARGS, *BODY_ARGS, *HEADER_ARGS, *SQL_ARGS, *RECIPIENT_ARGS,
              *RECURSIVE_ARGS, "edits", "replace_all", "method", "action"):
    _KNOWN_BY_SQUASH.setdefault(_name.lower().replace("_", "").replace("-", ""), _name)

# -- hidden characters (the one definition; render.reveal shows them) ----------------------------

BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")
# Characters that render as (almost) an ordinary space but are not one to a shell or a parser.
ODD_SPACES = frozenset("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                       "\u200a\u202f\u205f\u3000\u2028\u2029")
CONTROL = frozenset(chr(c) for c in [*range(0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)])
LONG_SPACE_RUN = 40
_HIDDEN_CLASS = re.compile("[" + re.escape("".join(sorted(BIDI | ZERO_WIDTH | ODD_SPACES | CONTROL))) + "]"
                           + r"|[ \t]{" + str(LONG_SPACE_RUN) + r",}\S")

# -- secrets in what a call sends ------------------------------------------------------------------

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("an AWS secret key", re.compile(r"aws_secret_access_key\s*[=:]\s*\S{20,}", re.I)),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an API key", re.compile(r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}"
                              r"|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,})")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{20,}")),
    ("a password in a URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]{3,}@", re.I)),
    ("a credential", re.compile(r"(?:secret|token|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key)\w*"
                                r"[\"']?\s*[=:]\s*[\"']?(?!\$)[A-Za-z0-9/+_.~-]{16,}", re.I)),
)


def secrets_in(text: str) -> tuple[str, ...]:
    """Which kinds of secret ``text`` carries (``"a GitHub token"``), most telling first."""
    return tuple(name for name, pattern in SECRET_PATTERNS if pattern.search(text))


# -- the reading -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PathUse:
    """One path a call touches: as written, resolved, and what is done to it."""

    path: str
    resolved: str
    operation: Operation
    recursive: bool = False
    via: str = ""              # the argument, or the program of a shell command
    listing: bool = False      # a read that lists names (ls ~/.ssh), not contents

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "resolved": self.resolved, "operation": self.operation}
        if self.recursive:
            out["recursive"] = True
        if self.listing:
            out["listing"] = True
        if self.via:
            out["via"] = self.via
        return out


@dataclass(frozen=True)
class ShellRun:
    """A command line the call runs: ``text`` as a shell would read it, ``argv`` when it was
    given as a list (run without a shell), ``key`` the argument that carried it."""

    text: str
    key: str
    argv: tuple[str, ...] | None = None
    programs: tuple[SimpleCommand, ...] = ()

    @property
    def parse_error(self) -> str | None:
        return next((c.parse_error for c in self.programs if c.parse_error), None)

    @property
    def unread(self) -> bool:
        """The line was past its reading's budget (:class:`~.shellparse.ReadBudget`): not read at all."""
        return len(self.programs) == 1 and over_budget(self.programs[0])

    @property
    def names(self) -> tuple[str, ...]:
        """The programs it starts, in order (``timeout 5 rm x`` starts ``rm``)."""
        return tuple(c.name for c in self.programs if c.argv)


@dataclass(frozen=True)
class Hidden:
    """A kind of hidden character (``bidi``, ``zero_width``, ``odd_space``, ``control``,
    ``escape``, ``spaces``) found in the argument ``where``; ``in_code`` when it sits where a
    shell reads code (a program name, an unquoted word), not inside quoted text."""

    kind: str
    where: str
    in_code: bool


@dataclass(frozen=True)
class CallReading:
    tool: str
    name: str
    family: Family
    args: Mapping[str, Any]
    cwd: str | None
    commands: tuple[ShellRun, ...] = ()
    paths: tuple[PathUse, ...] = ()
    urls: tuple[str, ...] = ()
    payloads: tuple[str, ...] = ()
    sql: tuple[str, ...] = ()
    hidden: tuple[Hidden, ...] = ()
    content: str | None = None          # what a write puts in the file
    edits: tuple[tuple[str, str, bool], ...] = ()   # (old, new, replace_all) of an edit
    patch: str | None = None
    extra_cwd: str | None = None        # a working directory the call names itself
    respelled: tuple[str, ...] = ()     # names read as the vocabulary's once unseen characters were dropped

    @property
    def programs(self) -> tuple[SimpleCommand, ...]:
        return tuple(c for run in self.commands for c in run.programs if c.argv)

    @property
    def command(self) -> ShellRun | None:
        return self.commands[0] if self.commands else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "family": self.family}
        if self.cwd:
            out["cwd"] = self.cwd
        if self.commands:
            out["commands"] = [{"text": run.text, "from": run.key, "programs": [" ".join(c.argv) for c in run.programs
                                                                               if c.argv]}
                               for run in self.commands]
        for key in ("urls", "payloads", "sql"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        if self.paths:
            out["paths"] = [use.to_json() for use in self.paths]
        if self.hidden:
            out["hidden"] = sorted({f"{h.kind} in {h.where}" for h in self.hidden})
        return out


def normalise_tool(tool: str) -> str:
    """``mcp__filesystem__write_file`` → ``write_file``; ``Bash`` → ``bash``."""
    return tool.rsplit("__", 1)[-1].lower() if isinstance(tool, str) else ""


# A code-block executor's block in one of these languages is a shell command line. Only the
# executors that run blocks in the language they are given: an evaluator of a browser page given
# "bash" still runs JavaScript, and a polyglot could read as a harmless command line.
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "zsh", "console", "shellscript"})
BLOCK_EXECUTORS = frozenset({"execute_code", "run_code"})


def shell_block(args: Mapping[str, Any]) -> str | None:
    """The code of a code tool's block written in a shell's language (``{"language": "bash",
    "code": "pytest -q"}``), else None."""
    language, code = args.get("language"), args.get("code")
    if isinstance(language, str) and language.strip().lower() in SHELL_LANGUAGES and isinstance(code, str):
        return code
    return None


def family_of(tool: str, args: Mapping[str, Any] | None = None) -> Family:
    name = normalise_tool(tool)
    if name in CODE_TOOLS:
        return "shell" if name in BLOCK_EXECUTORS and args and shell_block(args) is not None else "unknown"
    if name in EDITOR_TOOLS:
        verb = args.get(EDITOR_VERB_ARG) if args else None
        return EDITOR_FAMILIES.get(verb, "unknown") if isinstance(verb, str) else "edit"
    known = _FAMILY_OF_TOOL.get(name)
    if known is not None:
        return known
    if args and _shell_values(args):
        return "shell"
    words = set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", tool).lower()))
    for family, known_words in _NAME_WORDS:
        if words & known_words:
            return family
    return "unknown"


def read_call(tool: str, args: Mapping[str, Any] | Any, cwd: str | None = None) -> CallReading:
    """Read ``tool(args)`` as run from ``cwd`` (the agent's directory). Never raises."""
    if not isinstance(args, Mapping):
        args = {}
    given_names = tuple(key for key in args if isinstance(key, str))
    args = with_known_names(args)
    tool = tool if isinstance(tool, str) else ""
    name = normalise_tool(tool)
    family = family_of(tool, args)
    own_cwds = [value for _, value in aliases_of(args, CWD_ARGS) if isinstance(value, str)]
    if family == "shell":   # Gemini CLI's run_shell_command, Zed's terminal (``cd``)
        own_cwds += [args[key] for key in ("directory", "dir_path", "cd") if isinstance(args.get(key), str)
                     and args[key]]
    own_cwd = own_cwds[0] if own_cwds else None
    if own_cwd:
        start = cwd
        cwd = resolve_path(own_cwd, start) if start or os.path.isabs(os.path.expanduser(own_cwd)) else own_cwd
        if len({resolve_path(other, start) for other in own_cwds}) > 1:
            cwd = UNKNOWN_DIR    # two working directories that disagree: where it runs is not known
    commands: tuple[ShellRun, ...] = ()
    if family == "shell":
        values = _shell_values(args)
        block = shell_block(args) if name in BLOCK_EXECUTORS else None
        if block is not None:
            values.append(("code", block))
        budget = ReadBudget()  # one for the call: a thousand command lines are read as one long one
        commands = tuple(_shell_run(key, value, budget) for key, value in values)
    reading = _Reader(tool, name, family, args, cwd, commands, given_names)
    return reading.finish(own_cwd)


QUERY_ARGS = ("query", "pattern", "q", "search", "prompt")


def summary_of(args: Mapping[str, Any] | Any, tool: str = "") -> str:
    """One line for a call in lists, menus and history: the command it runs, else the first path
    it touches, URL it fetches, SQL it runs or query it makes, else its arguments as JSON."""
    if not isinstance(args, Mapping):
        return _compact(args)
    reading = read_call(tool, args)
    if reading.commands:
        return reading.commands[0].text
    for found in (tuple(use.path for use in reading.paths), reading.urls, reading.sql):
        if found:
            return found[0]
    text = _first_str(args, QUERY_ARGS)
    return text if text else _compact(args)


def _squashed(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


_UNSEEN_IN_NAMES = BIDI | ZERO_WIDTH | ODD_SPACES | CONTROL


def known_name(key: Any) -> str | None:
    """The vocabulary's name an argument's name means (``CommandLine`` → ``command_line``), or None.

    Characters that cannot be seen (zero-width, bidi, control, look-alike and plain spaces) are
    dropped first: ``comm\u200band`` shows as ``command``, and an agent's tool may well read it
    so, hence the reader reads it as ``command`` too (the hidden characters are still reported)."""
    if not isinstance(key, str):
        return None
    if key in _KNOWN_NAMES:
        return key
    return _KNOWN_BY_SQUASH.get(_squashed(_seen_part(key)))


def _seen_part(name: str) -> str:
    return "".join(ch for ch in name if ch not in _UNSEEN_IN_NAMES and not ch.isspace())


def respelled_names(names: Iterable[Any]) -> tuple[str, ...]:
    """The names read as a vocabulary name only once characters nobody sees (or spaces) were
    dropped from them: what the person is shown is not what the agent sent."""
    return tuple(name for name in names if isinstance(name, str) and _seen_part(name) != name
                 and known_name(name) is not None)


def with_known_names(args: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments with names spelled otherwise (``CommandLine``, ``filePath``, ``Cwd``,
    ``comm\u200band``) under the vocabulary's own spelling, so every tool's dialect reads alike;
    others are kept, and so is a second spelling of a name already given (the readers that take
    one value per role read every spelling through :func:`aliases_of`)."""
    renamed: dict[str, Any] | None = None
    taken = set(args)
    for key in args:
        if not isinstance(key, str) or key in _KNOWN_NAMES:
            continue
        known = known_name(key)
        if known is not None and known not in taken:
            if renamed is None:
                renamed = {}
            renamed[key] = known
            taken.add(known)
    if renamed is None:
        return args
    return {renamed.get(key, key): value for key, value in args.items()}


def shell_text(value: Any) -> tuple[str, tuple[str, ...] | None] | None:
    """The command line a ``command`` value runs: a string as is; an argv as the shell line that
    splits back into it, except ``[bash, -lc, SCRIPT]`` (as Codex sends it), which runs SCRIPT."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, (list, tuple)) and value and all(isinstance(part, str) for part in value):
        argv = tuple(value)
        if len(argv) == 3 and os.path.basename(argv[0]) in SHELLS and re.fullmatch(r"-\w*c\w*", argv[1]):
            return argv[2], argv
        return shlex.join(argv), argv
    return None


def aliases_of(args: Mapping[str, Any], names: Iterable[str]) -> list[tuple[str, Any]]:
    """Every ``(key, value)`` of ``args`` whose name means one of ``names`` (any spelling, see
    :func:`known_name`), in the order of ``names``; empty values are left out."""
    wanted = tuple(names)
    found = [(wanted.index(name), key, value) for key, value in args.items()
             if (name := known_name(key)) in wanted and value not in (None, "", [], {})]
    return [(key, value) for _, key, value in sorted(found, key=lambda item: item[0])]


def _shell_values(args: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The command values of a call: every shell argument present, under any of its names (an
    agent's tool may run any of them, so each is read), and OpenAI's
    ``{"action": {"type": "exec", "command": [...]}}``; several for a ``commands`` list."""
    found: list[tuple[str, Any]] = []
    for key, value in aliases_of(args, SHELL_ARGS):
        if known_name(key) == "command" and isinstance(value, str) and value in _NOT_SHELL_COMMANDS:
            continue    # an editor's verb (``view``), not a command line
        if known_name(key) == "commands" and isinstance(value, list) and all(isinstance(v, (str, list))
                                                                             for v in value):
            found += [(f"{key}[{i}]", v) for i, v in enumerate(value) if shell_text(v) is not None]
        elif shell_text(value) is not None:
            found.append((key, value))
    action = args.get("action")
    if isinstance(action, Mapping):
        found += [(f"action.{key}", value) for key, value in _shell_values(action)]
    return found


def read_command(value: str | list[str] | tuple[str, ...], key: str = "command") -> ShellRun:
    """One command line (a string, or an argv) read on its own, as a shell tool's call would be."""
    return _shell_run(key, value)


def _shell_run(key: str, value: Any, budget: ReadBudget | None = None) -> ShellRun:
    text, argv = shell_text(value) or ("", None)
    return ShellRun(text, key, argv, tuple(split_commands(text, budget)))


def _first(args: Mapping[str, Any], names: Iterable[str]) -> Any:
    for name in names:
        value = args.get(name)
        if value not in (None, ""):
            return value
    return None


def _first_str(args: Mapping[str, Any], names: Iterable[str]) -> str | None:
    value = _first(args, names)
    return value if isinstance(value, str) else None


# -- paths -------------------------------------------------------------------------------------------

def resolve_path(path: str, cwd: str | None) -> str:
    """Absolute and normalised: ``~``, ``$HOME`` and ``${HOME}`` are the home directory; a
    relative path is taken from ``cwd`` (or kept relative, as ``./x``, when it is unknown)."""
    text = path.strip()
    text = re.sub(r"^(\$HOME|\$\{HOME\})(?=/|$)", "~", text)
    text = os.path.expanduser(text)
    if not os.path.isabs(text):
        if not cwd:
            return os.path.normpath(text)
        text = os.path.join(os.path.expanduser(cwd), text)
    resolved = os.path.normpath(text)
    return "/" + resolved.lstrip("/") if resolved.startswith("//") else resolved


def _use(path: str, cwd: str | None, operation: Operation, via: str, recursive: bool = False,
         listing: bool = False) -> PathUse:
    return PathUse(path, resolve_path(path, cwd), operation, recursive, via, listing)


def operands(argv: tuple[str, ...] | list[str]) -> list[str]:
    """The words after the program that are not options (everything after ``--``)."""
    out: list[str] = []
    done = False
    for word in argv[1:]:
        if word == "--" and not done:
            done = True
        elif done or not word.startswith("-") or word == "-":
            out.append(word)
    return out


_operands = operands


def option_flags(argv: Iterable[str]) -> set[str]:
    """Short and long options: ``-rf`` gives ``{"r", "f"}``, ``--force`` gives ``{"--force"}``."""
    out: set[str] = set()
    for word in argv:
        if word.startswith("--"):
            out.add(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            out.update(word[1:])
    return out


_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "srm", "trash", "trash-put", "gio"})
_WRITERS = frozenset({"touch", "mkdir", "truncate", "chmod", "chown", "chgrp", "setfacl", "chattr"})
_LISTERS = frozenset({"ls", "ll", "la", "tree", "du", "stat", "file", "find", "fd", "exa", "eza", "lsd", "realpath",
                      "readlink", "test", "[", "[["})
_READERS = frozenset({"cat", "bat", "head", "tail", "less", "more", "nl", "od", "xxd", "hexdump", "strings",
                      "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "base64", "zcat", "zless", "diff",
                      "cmp", "wc", "sort", "uniq", "tac", "cut", "column", "source", ".", "gpg", "openssl",
                      "ssh-keygen", "shasum", "b2sum", "iconv", "fold", "fmt", "expand", "paste", "view", "vim",
                      "vi", "nano", "emacs", "code", "zip", "7z"})
# Files a build or a run generates and regenerates (compiled code, logs, editor leftovers).
_GENERATED = re.compile(r"\*\.(pyc|pyo|o|obj|class|log|tmp|orig|rej|bak|swp|gcda|gcno|d)|\*~|\.DS_Store")
# tar's long mode options, by the letter of their short spelling
_TAR_MODES = {"--create": "c", "--extract": "x", "--get": "x", "--list": "t", "--append": "r", "--update": "u"}
_COMPRESSORS = frozenset({"gzip", "gunzip", "xz", "unxz", "bzip2", "bunzip2", "zstd", "unzstd", "lzma"})
_COUNTERS = frozenset({"wc", "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "shasum", "b2sum", "sum"})
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "jq", "yq", "sed", "zgrep"})


def command_paths(cmd: SimpleCommand, cwd: str | None) -> list[PathUse]:
    """The paths one simple command touches and how (the program's own semantics)."""
    return list(_command_paths(cmd, cwd, os.path.expanduser("~"), catalog_generation()))


@lru_cache(maxsize=4096)
def _command_paths(cmd: SimpleCommand, cwd: str | None, home: str, _catalog: int) -> tuple[PathUse, ...]:
    """Cached (risk asks again for the paths of each program it judges); ``home`` is in the key
    because ``~`` resolves against it, the catalog's generation because the grammar reads the words."""
    return tuple(_paths_of(cmd, cwd))


def _paths_of(cmd: SimpleCommand, cwd: str | None) -> list[PathUse]:
    uses: list[PathUse] = []
    for redirect in cmd.redirects:
        if redirect.writes:
            uses.append(_use(redirect.target, cwd, "write", redirect.op))
        elif redirect.op.lstrip("0123456789") in ("<", "<>") and redirect.target:
            uses.append(_use(redirect.target, cwd, "read", "<"))
    if not cmd.argv:
        return uses
    name, argv = cmd.name, cmd.argv
    found = parse(argv)
    read_by_grammar = found.known and not found.gaps and len(found.levels) == 1
    if read_by_grammar:
        # the words as the program reads them: an option's value is never an operand or a flag
        operands = list(found.operands)
        flags = {use.option if use.option.startswith("--") else use.option[1:] for use in found.options()}
    else:   # a program the grammar does not read: not understood; its paths are only for the badge
        operands = _operands(argv)
        flags = option_flags(argv[1:])
    if name in _DELETERS:
        recursive = name != "rmdir" and bool(flags & {"r", "R", "--recursive"})
        for target in operands:
            uses.append(_use(target, cwd, "delete", name, recursive))
    elif name in ("cp", "mv", "rsync", "scp", "install", "ln"):
        local = [o for o in operands if not (":" in o and name in ("rsync", "scp"))]
        deletes = bool(found.by_role("deletes")) if read_by_grammar else any(w.startswith("--del") for w in argv)
        if name == "rsync" and deletes and operands and ":" not in operands[-1]:
            uses.append(_use(operands[-1], cwd, "delete", name, True))
        if len(local) >= 2 or (local and len(operands) >= 2):
            *sources, target = operands
            for source in sources:
                if ":" in source and name in ("rsync", "scp"):
                    continue
                # a hard link (ln, cp -l) is its source: a later write to it writes the source
                linked = name == "ln" and not flags & {"s", "--symbolic"} or name == "cp" and bool(
                    flags & {"l", "--link"})
                uses.append(_use(source, cwd, "delete" if name == "mv" else "write" if linked else "read", name,
                                 bool(flags & {"r", "R", "a", "--recursive"})))
            if not (":" in target and name in ("rsync", "scp")):
                uses.append(_use(target, cwd, "write", name, bool(flags & {"r", "R", "a", "--recursive"})))
    elif name in _WRITERS:
        targets = operands[1:] if name in ("chmod", "chown", "chgrp", "setfacl", "chattr") else operands
        if name == "truncate":
            targets = [o for o in operands if not re.fullmatch(r"[+-<>/%]?\d+[KMGTPkmgtp]?B?", o)]
        for target in targets:
            uses.append(_use(target, cwd, "write", name, bool(flags & {"R", "--recursive"})))
    elif name == "tee":
        pass  # its files are redirects (see shellparse)
    elif name == "tar" and read_by_grammar and argv[1:2] and argv[1].startswith("-"):
        # the mode, the archive and the directory as tar reads them (--file=A, -cf A, --create)
        modes = {use.option.lstrip("-")[:1] if len(use.option) == 2 else _TAR_MODES.get(use.option, "")
                 for use in found.options()}
        kept = next(reversed(found.values("-f", "--file")), None)
        into = next(reversed(found.values("-C", "--directory")), None)
        if "x" in modes:
            uses.append(_use(into or ".", cwd, "write", "tar", True))
        if kept and kept != "-":
            creates = bool(modes & {"c", "r", "u"})
            uses.append(_use(kept, cwd, "write" if creates else "read", "tar", listing="t" in modes))
        if modes & {"c", "r", "u"}:
            uses += [_use(target, cwd, "read", "tar") for target in operands]
    elif name == "tar":
        mode = next((w for w in argv[1:2] if not w.startswith("-")), "") + "".join(
            w[1:] for w in argv[1:] if w.startswith("-") and not w.startswith("--"))
        directory = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-C", "--directory")), None)
        archive = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w == "-f" or (w.startswith("-") and
                        not w.startswith("--") and w.endswith("f"))), None)
        if archive is None and argv[1:2] and not argv[1].startswith("-") and "f" in argv[1] and len(argv) > 2:
            archive = argv[2]           # old style: tar czf ARCHIVE files...
            operands = list(argv[3:])
        if "x" in mode:
            uses.append(_use(directory or ".", cwd, "write", "tar", True))
            if archive:
                uses.append(_use(archive, cwd, "read", "tar"))
        elif "c" in mode or "r" in mode or "u" in mode:
            if archive and archive != "-":
                uses.append(_use(archive, cwd, "write", "tar"))
            for target in operands:
                if target != archive:
                    uses.append(_use(target, cwd, "read", "tar"))
        elif archive:
            uses.append(_use(archive, cwd, "read", "tar", listing=True))
    elif name == "git" and found.known and not found.gaps and found.subcommand == ("clone",):
        # the directory it clones into, as git reads the words (git clone -b main URL DIR)
        if len(found.operands) >= 2:
            uses.append(_use(found.operands[1], cwd, "write", "git clone", True))
    elif name == "git" and "clone" in argv[1:3]:
        # not read by the grammar (not understood): every later word may be the directory
        for word in [w for w in argv[argv.index("clone") + 1:] if not w.startswith("-")][1:]:
            uses.append(_use(word, cwd, "write", "git clone", True))
    elif name == "sort" and read_by_grammar:
        uses += [_use(output, cwd, "write", "sort") for output in found.values("-o", "--output")]
    elif name == "sort":
        # not read by the grammar: any word after an -o may be the file it writes
        uses += [_use(argv[i + 1], cwd, "write", "sort") for i, w in enumerate(argv[:-1])
                 if w.startswith(("-o", "--output")) or re.fullmatch(r"-\w*o", w)]
    elif name == "dd":
        for word in argv[1:]:
            if word.startswith("of="):
                uses.append(_use(word[3:], cwd, "write", "dd"))
            elif word.startswith("if="):
                uses.append(_use(word[3:], cwd, "read", "dd"))
    elif name == "sed":
        in_place = bool(found.by_role("inplace")) if read_by_grammar else any(
            w.startswith("-") and not w.startswith("--") and "i" in w or w.startswith("--in-place") for w in argv[1:])
        for target in operands[1:]:
            uses.append(_use(target, cwd, "write" if in_place else "read", "sed"))
    elif name == "find":
        # every root: the words before the first option or operator (find . /home/me -delete)
        expression = next((i for i, w in enumerate(argv[1:], 1) if w.startswith(("-", "(", "!", ")", ","))), len(argv))
        roots = list(argv[1:expression]) or ["."]
        names = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-name", "-iname")]
        generated = "-delete" in argv and bool(names) and len(roots) == 1 \
            and roots[0].rstrip("/") not in ("", "~", "$HOME", "${HOME}") \
            and not {"-o", "-or", "!", "-not", "-prune", ","} & set(argv) \
            and all(_GENERATED.fullmatch(n) for n in names)
        if generated:
            # find . -name '*.pyc' -delete: the compiled files under the root, not the root itself
            for pattern in names:
                uses.append(_use(f"{roots[0].rstrip('/')}/{pattern}", cwd, "delete", "find"))
        else:
            uses += [_use(root, cwd, "delete" if "-delete" in argv else "read", "find", True,
                          listing="-delete" not in argv) for root in roots]
    elif name in _LISTERS:
        for target in operands:
            uses.append(_use(target, cwd, "read", name, listing=True))
    elif name in _COMPRESSORS:
        # gzip FILE replaces FILE by FILE.gz; gzip -d FILE.gz writes FILE (outside, if FILE is)
        decompress = name.startswith(("gun", "unxz", "bun", "unzst")) or bool(flags & {"d", "--decompress"})
        for target in operands:
            written = re.sub(r"\.(gz|xz|bz2|zst|lzma|Z)$", "", target) if decompress else target
            uses.append(_use(target, cwd, "read", name))
            if not flags & {"c", "--stdout", "l", "--list", "t", "--test"}:
                uses.append(_use(written, cwd, "write", name))
    elif name in _COUNTERS:
        # counts, sizes and digests of a file are not its content (wc -l ~/.ssh/id_rsa)
        for target in operands:
            uses.append(_use(target, cwd, "read", name, listing=True))
    elif name in _READERS or name in _PATTERN_FIRST:
        targets = operands[1:] if name in _PATTERN_FIRST else operands
        if name == "tar":
            targets = [t for t in targets if "/" in t or "." in t]
        for target in targets:
            if "/" in target or target.startswith(("~", "$HOME", ".")) or "." in target:
                uses.append(_use(target, cwd, "read", name))
    elif (name == "curl" or name == "wget") and read_by_grammar:
        for use in found.options():
            if use.value is None:
                continue
            if use.role == "write":
                uses.append(_use(use.value, cwd, "write", name))
            elif use.role == "upload":
                uses.append(_use(use.value.lstrip("@"), cwd, "read", f"{name} upload"))
            elif use.role in ("body", "data") and "@" in use.value:
                uses.append(_use(use.value.split("@", 1)[1], cwd, "read", f"{name} upload"))
            elif use.role == "url" and use.value.lower().startswith("file://"):
                uses.append(_use(use.value[7:] or "/", cwd, "read", name))
        for word in operands:
            if word.lower().startswith("file://"):
                uses.append(_use(word[7:] or "/", cwd, "read", name))
    elif name == "curl" or name == "wget":
        # not read by the grammar: every word that could name a file it writes or sends is one
        for i, word in enumerate(argv[:-1]):
            if word.startswith("-") and not word.startswith("--") and ("o" in word or "O" in word or "T" in word) \
                    or word in ("--output", "--output-document", "--upload-file"):
                uses.append(_use(argv[i + 1], cwd, "write", name))
    return uses


def _patch_uses(patch: str, cwd: str | None, via: str) -> list[PathUse]:
    """The files a patch writes or deletes: ``*** Update File:`` headers, or ``---``/``+++`` lines."""
    uses: list[PathUse] = []
    old: str | None = None
    for line in patch.splitlines():
        header = re.match(r"\*\*\* (Add|Update|Delete) File: (.+)", line)
        if header:
            uses.append(_use(header.group(2).strip(), cwd, "delete" if header.group(1) == "Delete" else "write", via))
        elif line.startswith("*** Move to: "):
            uses.append(_use(line.split(":", 1)[1].strip(), cwd, "write", via))
        elif line.startswith("--- "):
            old = _diff_path(line[4:])
        elif line.startswith("+++ "):
            new = _diff_path(line[4:])
            if new is not None:
                uses.append(_use(new, cwd, "write", via))
            elif old is not None:
                uses.append(_use(old, cwd, "delete", via))
    return uses


def _diff_path(header: str) -> str | None:
    path = header.split("\t", 1)[0].strip()
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


# -- hidden characters ----------------------------------------------------------------------------

def hidden_in(text: str) -> set[str]:
    """The kinds of hidden character in ``text`` (empty for plain text; one regex scan).

    A call is read several times as it is answered (its risk, whether it needs facts, the rules), so
    the scans of the last few texts are kept: a 1 MiB command is scanned once, not six times."""
    return set(_hidden_kinds(text))


@lru_cache(maxsize=16)
def _hidden_kinds(text: str) -> frozenset[str]:
    kinds: set[str] = set()
    for match in _HIDDEN_CLASS.finditer(text):
        char = match.group(0)
        if len(char) > 1:
            kinds.add("spaces")
        elif char in BIDI:
            kinds.add("bidi")
        elif char in ZERO_WIDTH:
            kinds.add("zero_width")
        elif char in ODD_SPACES:
            kinds.add("odd_space")
        elif char == "\x1b":
            kinds.add("escape")
        elif char == "\r" and text[match.end():match.end() + 1] != "\n":
            kinds.add("control")        # a carriage return that ends no line: a terminal overprints
        elif char not in "\n\t\r":
            kinds.add("control")
    return frozenset(kinds)


def strings_in(value: Any, where: str, limit: int = 2000) -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every string inside ``value`` (keys too), bounded."""
    stack: list[tuple[str, Any]] = [(where, value)]
    seen = 0
    while stack and seen < limit:
        place, item = stack.pop()
        seen += 1
        if isinstance(item, str):
            yield place, item
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                stack.append((place, key))
                stack.append((f"{place}.{key}" if place else str(key), inner))
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{place}[{i}]", inner) for i, inner in enumerate(item))


# -- the reader ---------------------------------------------------------------------------------------

@dataclass
class _Reader:
    tool: str
    name: str
    family: Family
    args: Mapping[str, Any]
    cwd: str | None
    commands: tuple[ShellRun, ...]
    given_names: tuple[str, ...] = ()     # the argument names as the agent wrote them
    paths: list[PathUse] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    payloads: list[str] = field(default_factory=list)
    sql: list[str] = field(default_factory=list)

    def finish(self, own_cwd: str | None) -> CallReading:
        args, cwd = self.args, self.cwd
        content = edits = patch = None
        if self.family == "shell":
            for run in self.commands:
                self._shell(run)
        else:
            content, edits, patch = self._tool()
        for key in URL_ARGS:
            value = args.get(key)
            if isinstance(value, str) and value:
                self.urls.append(value)
        if self.family in ("network", "message", "unknown", "database"):
            for key in (*BODY_ARGS, *HEADER_ARGS, *RECIPIENT_ARGS):
                if key in args and args[key] not in (None, ""):
                    value = args[key]
                    self.payloads.append(value if isinstance(value, str) else _compact(value))
        if self.family in ("database", "unknown"):
            for key in SQL_ARGS:
                value = args.get(key)
                if isinstance(value, str) and _looks_like_sql(value):
                    self.sql.append(value)
                elif isinstance(value, list):
                    self.sql.extend(v for v in value if isinstance(v, str) and _looks_like_sql(v))
        return CallReading(self.tool, self.name, self.family, args, cwd, self.commands,
                           tuple(dict.fromkeys(self.paths)), tuple(dict.fromkeys(self.urls)),
                           tuple(self.payloads), tuple(self.sql), self._hidden(),
                           content, tuple(edits or ()), patch, own_cwd, respelled_names(self.given_names))

    def _shell(self, run: ShellRun) -> None:
        # each program's paths from the directory it runs in (``cd data && rm a.txt`` deletes data/a.txt)
        for program, here in zip(run.programs, working_dirs(run.programs, self.cwd), strict=True):
            self.paths.extend(command_paths(program, here))
            argv = program.argv
            if not argv:
                continue
            if program.name in ("curl", "wget", "http", "https", "xh", "aria2c", "git", "nc", "ssh"):
                self.urls.extend(w for w in argv[1:] if re.match(r"[a-z][a-z0-9+.-]*://", w))
            if program.name in ("curl", "http", "https", "xh", "wget"):
                for i, word in enumerate(argv[:-1]):
                    if word in ("-d", "--data", "--data-binary", "--data-raw", "--json", "-H", "--header", "-u",
                                "--user", "-F", "--form", "--post-data", "--header="):
                        self.payloads.append(argv[i + 1])
                self.payloads.extend(w.split("=", 1)[1] for w in argv if w.startswith(("--data=", "--header=",
                                                                                       "--post-data=")))
            if program.name in ("psql", "mysql", "sqlite3", "duckdb", "mariadb"):
                for i, word in enumerate(argv[:-1]):
                    if word in ("-c", "--command", "-e", "--execute"):
                        self.sql.append(argv[i + 1])
                if program.name in ("sqlite3", "duckdb"):
                    self.sql.extend(w for w in _operands(argv)[1:] if _looks_like_sql(w))

    def _tool(self) -> tuple[str | None, list[tuple[str, str, bool]] | None, str | None]:
        args, cwd, family = self.args, self.cwd, self.family
        path_keys = PATH_ARGS + (SOURCE_ARGS + DESTINATION_ARGS if family == "unknown" else ())
        paths = [(key, args[key]) for key in path_keys if isinstance(args.get(key), str) and args[key]]
        for key in LIST_PATH_ARGS:
            if isinstance(args.get(key), list):
                paths += [(key, p) for p in args[key] if isinstance(p, str) and p]
        edits_arg = args.get("edits")
        if isinstance(edits_arg, list):
            paths += [("edits", e["path"]) for e in edits_arg if isinstance(e, Mapping) and isinstance(e.get("path"),
                                                                                                      str)]
        content = _first_str(args, CONTENT_ARGS) if family in ("write", "edit") else None
        edits = _edits(args) if family == "edit" else None
        patch = None
        if family in ("read", "network", "database", "message", "unknown"):
            recursive = family == "unknown" and _recursive(args)
            if family == "unknown":
                for key in (*DESTINATION_ARGS, "target", "output", "out", "output_path", "output_dir"):
                    value = args.get(key)
                    if isinstance(value, str) and value:
                        self.paths.append(_use(value, cwd, "write", key, recursive))
                paths = [(key, path) for key, path in paths if key not in DESTINATION_ARGS and key != "target"]
            for key, path in paths:
                listing = self.name in ("list_directory", "list_dir", "list_files", "ls", "list",
                                        "list_directory_with_sizes", "directory_tree", "glob", "search_files",
                                        "find_files", "get_file_info", "file_info") or key == "repo_path" or \
                    args.get("output_mode") in ("files_with_matches", "count")
                self.paths.append(_use(path, cwd, "read", key, recursive, listing))
        elif family == "delete":
            recursive = _recursive(args) or self.name in ("delete_directory", "remove_directory")
            for key, path in paths:
                self.paths.append(_use(path, cwd, "delete", key, recursive))
        elif family == "move":
            copies = "copy" in self.name or self.name == "cp"
            source = _first_str(args, SOURCE_ARGS) or (paths[0][1] if paths else None)
            target = _first_str(args, DESTINATION_ARGS)
            if source:
                self.paths.append(_use(source, cwd, "read" if copies else "delete", "source"))
            if target:
                self.paths.append(_use(target, cwd, "write", "destination"))
        elif family == "patch" and isinstance(args.get("operation"), Mapping):
            # OpenAI's apply_patch tool: {"operation": {"type": "update_file", "path": ..., "diff": ...}}
            operation = args["operation"]
            kind, target = operation.get("type"), operation.get("path")
            if isinstance(target, str) and target:
                self.paths.append(_use(target, cwd, "delete" if kind == "delete_file" else "write", "operation"))
            diff = operation.get("diff")
            patch = diff if isinstance(diff, str) else None
            if kind not in ("create_file", "update_file", "delete_file") or not isinstance(target, str):
                self.paths.append(_use(str(target or ""), cwd, "write", "operation"))
        elif family in ("write", "edit", "patch"):
            text = _first_str(args, PATCH_ARGS) if family in ("patch", "edit") else None
            if family == "patch" or (text and ("@@" in text or "*** Begin Patch" in text)):
                patch = text
            for key, path in paths:
                self.paths.append(_use(path, cwd, "write", key))
            if patch:
                self.paths.extend(_patch_uses(patch, cwd, "patch"))
        return content, edits, patch

    def _hidden(self) -> tuple[Hidden, ...]:
        found: list[Hidden] = []
        shell_keys = {run.key.split(".")[0].split("[")[0] for run in self.commands}
        for run in self.commands:
            kinds = hidden_in(run.text)
            if not kinds:
                continue
            in_code = self._in_code(run)
            for kind in kinds:
                found.append(Hidden(kind, run.key, kind != "zero_width" or in_code))
        rest = {k: v for k, v in self.args.items() if k not in shell_keys}
        for where, text in strings_in(rest, ""):
            for kind in hidden_in(text):
                found.append(Hidden(kind, where or "(argument name)", False))
        for given in self.given_names:     # a name read under its known spelling keeps what hid in it
            for kind in hidden_in(given):
                found.append(Hidden(kind, "(argument name)", False))
        for key in shell_keys:              # and so does a name inside an action ({"action": {"comm\u200band"}})
            value = self.args.get(key)
            for inner in value if isinstance(value, Mapping) else ():
                for kind in hidden_in(str(inner)):
                    found.append(Hidden(kind, f"{key} (argument name)", False))
        return tuple(dict.fromkeys(found))

    @staticmethod
    def _in_code(run: ShellRun) -> bool:
        """Whether zero-width characters sit where the shell reads code: in a program's name,
        an option, or an unquoted word, rather than inside a quoted message."""
        for program in run.programs:
            if program.argv and hidden_in(program.argv[0]):
                return True
            for word in program.argv[1:]:
                if hidden_in(word) and (word.startswith("-") or " " not in word and "=" not in word
                                        and not _quoted_in(run.text, word)):
                    return True
        return bool(run.parse_error)


def _quoted_in(text: str, word: str) -> bool:
    return f"'{word}'" in text or f'"{word}"' in text or any(q + word in text for q in ("'", '"'))


def _recursive(args: Mapping[str, Any]) -> bool:
    for key in RECURSIVE_ARGS:
        value = args.get(key)
        if value is True or value == 1 or (isinstance(value, str) and value.lower() in ("true", "yes", "1")):
            return True
    return False


def _edits(args: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """``(old, new, replace_all)`` of an edit: one pair, or an ``edits`` list (MultiEdit, MCP)."""
    out: list[tuple[str, str, bool]] = []
    old, new = _first(args, OLD_ARGS), _first(args, NEW_ARGS)
    if isinstance(old, str) and isinstance(new, str):
        out.append((old, new, bool(args.get("replace_all"))))
    items = args.get("edits")
    if isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping):
                old, new = _first(item, OLD_ARGS), _first(item, NEW_ARGS)
                if isinstance(old, str) and isinstance(new, str):
                    out.append((old, new, bool(item.get("replace_all"))))
    return out


_SQL_START = re.compile(r"^\s*(?:--[^\n]*\n\s*)*(select|insert|update|delete|drop|truncate|alter|create|replace|merge"
                        r"|with|pragma|explain|show|describe|grant|revoke|vacuum|attach|detach|begin|commit|rename"
                        r"|copy|call|exec|execute|do|set|load|lock|reindex|cluster|analyze|comment|import|unload)\b",
                        re.I)


def _looks_like_sql(text: str) -> bool:
    return bool(_SQL_START.match(text))


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)[:100_000]
    except (TypeError, ValueError):
        return str(value)[:100_000]


# -- working directories inside a command line ----------------------------------------------------

UNKNOWN_DIR = "/nonexistent-unknown-directory"   # after ``cd "$X"``: relative paths lead nowhere known


def working_dirs(programs: Iterable[SimpleCommand], cwd: str | None) -> list[str | None]:
    """The directory each program of a command line runs in: ``cd``/``pushd`` at the top level
    move every later program; a ``cd`` to a path that is not literal (a variable, a glob,
    ``-``), or one inside a subshell, group or function, leaves later programs in a directory
    not known, so their relative paths are judged as outside the working directory."""
    out: list[str | None] = []
    here = cwd
    for program in programs:
        moved = _ENV_CHDIR.search(program.text or "") if "env" in program.wrappers else None
        if moved is not None:   # env -C DIR / --chdir=DIR: this one program runs there
            target = moved.group(1).strip("'\"")
            out.append(resolve_path(target, here) if literal_path(target) else UNKNOWN_DIR)
        else:
            out.append(here)
        if program.name not in ("cd", "pushd", "popd") or not program.argv:
            continue
        targets = [w for w in program.argv[1:] if not w.startswith("-")]
        nested = program.depth > 0 or program.construct != "" or program.function != ""
        if program.name == "popd" or nested or len(targets) > 1:
            here = UNKNOWN_DIR
        elif not targets:
            here = os.path.expanduser("~")
        elif not literal_path(targets[0]):
            here = UNKNOWN_DIR
        else:
            here = resolve_path(targets[0], here) if here or os.path.isabs(os.path.expanduser(targets[0])) \
                else UNKNOWN_DIR
    return out


_ENV_CHDIR = re.compile(r"\benv\s+(?:-[^\sC-]\S*\s+)*(?:-C\s*|--chdir[=\s]+)(\S+)")
_NOT_LITERAL = re.compile(r"[$`*?\[\]{}]|^~[^/]|^[+-]")


def literal_path(word: str) -> bool:
    """Whether a path is written out: no variable (but ``$HOME``), substitution, glob or brace,
    not ``~user``, not an option-looking word."""
    text = re.sub(r"^(\$HOME|\$\{HOME\})(?=/|$)", "~", word.strip())
    return bool(text) and not _NOT_LITERAL.search(text)


# -- wrapped calls -----------------------------------------------------------------------------------

WRAPPER_TOOLS = frozenset({"use_mcp_tool"})


def unwrap_call(tool: str, args: Any) -> tuple[str, Any]:
    """Cline's ``use_mcp_tool {server_name, tool_name, arguments}`` is the call it wraps
    (``mcp__SERVER__TOOL`` with those arguments, given as an object or as JSON text); any other
    call, or a wrapper whose inner call cannot be read, is returned as it is."""
    if normalise_tool(tool) not in WRAPPER_TOOLS or not isinstance(args, Mapping):
        return tool, args
    server, inner = args.get("server_name"), args.get("tool_name")
    arguments = args.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return tool, args
    if not isinstance(server, str) or not isinstance(inner, str) or not inner or not isinstance(arguments, Mapping):
        return tool, args
    return f"mcp__{server}__{inner}", arguments
