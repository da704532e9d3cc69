"""An MCP gate in front of any MCP server, and Claude Code's permission-prompt tool (``[mcp]`` extra).

``desktop-approver mcp-gate -- npx -y @modelcontextprotocol/server-filesystem ~/work`` runs the
upstream server as a child over stdio and serves its tools, unchanged, over our own stdio. Every
``tools/call`` is asked first (the tool's MCP annotations go along as hints); an allowed call is
forwarded with the person's edited arguments, a denied one is answered as a tool result with
``isError`` and the person's note, so the model reads it and goes on. ``allow_read_only`` passes
calls that the app's own risk classifier calls safe without asking (annotations are never trusted
for that).

A policy ``block`` cannot end the run through MCP: the protocol has no way for a server to stop
its client's agent. The gate answers it as a refusal whose text says it was a block.

``desktop-approver mcp-permission`` serves one tool, ``approve``, for Claude Code's
``--permission-prompt-tool mcp__desktop-approver__approve``: it answers
``{"behavior": "allow", "updatedInput": {...}}`` or ``{"behavior": "deny", "message": "..."}``;
a policy ``block`` adds ``"interrupt": true``, which ends Claude's run (the permission result's
documented field, as in the Agent SDK's ``PermissionResultDeny``).

Both use the official ``mcp`` SDK (2.x: the low-level ``Server`` with ``on_list_tools`` /
``on_call_tool`` handlers, ``stdio_client`` + ``ClientSession`` for the upstream).
"""

from __future__ import annotations

import json
import logging
import os
import signal
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client, stdio_server
from mcp.server.lowlevel.server import Server

from ..client.errors import Blocked
from ..client.wording import block_message
from .base import Answer, Approver, approver_or_default, hints_from

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream
    from mcp.shared.message import SessionMessage

log = logging.getLogger("desktop_approver.adapters.mcp")
PERMISSION_TOOL = "approve"
PERMISSION_SERVER = "desktop-approver"


def refusal(text: str) -> types.CallToolResult:
    """A denied call as the model sees it: a tool result with isError and the reason."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class Gate:
    """Asks before forwarding each ``tools/call`` to the upstream session; lists tools unchanged."""

    def __init__(self, upstream: ClientSession, approver: Approver, *, allow_read_only: bool = False) -> None:
        self.upstream = upstream
        self.approver = approver_or_default(approver, None)
        self.allow_read_only = allow_read_only
        self.tools: dict[str, types.Tool] = {}

    def __repr__(self) -> str:
        return f"Gate(agent={self.approver.agent!r}, tools={len(self.tools)}, allow_read_only={self.allow_read_only})"

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        result = await self.upstream.list_tools(params=params)
        for tool in result.tools:
            self.tools[tool.name] = tool
        return result

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        if params.name not in self.tools:
            await self._refresh_tools()
        tool = self.tools.get(params.name)
        hints = hints_from(tool.annotations) if tool is not None else None
        if self.allow_read_only and _assessed_safe(params.name, args, hints):
            log.debug("forwarding %s without asking: the risk classifier calls it safe", params.name)
            return await self._forward(params.name, args)
        try:
            answer = await self.approver.ask_async(params.name, args, hints=hints,
                                                   description=tool.description if tool is not None else None)
        except Blocked as exc:
            # A policy block ends nothing in MCP: the client reads it as the refusal it is.
            return refusal(block_message(exc))
        if not answer.allowed:
            return refusal(answer.message)
        return await self._forward(params.name, answer.args)

    async def _forward(self, name: str, args: dict[str, Any]) -> types.CallToolResult:
        result = await self.upstream.call_tool(name, args)
        assert isinstance(result, types.CallToolResult)
        return result

    async def _refresh_tools(self) -> None:
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self.upstream.list_tools(params=params)
            self.tools.update({tool.name: tool for tool in page.tools})
            cursor = page.next_cursor
            if not cursor:
                return


def passed_through(upstream: ClientSession, capabilities: types.ServerCapabilities) -> dict[str, Any]:
    """Handlers that hand the upstream's resources and prompts on unchanged (only those it has).

    Resources and prompts are read by the client application, not run by the model, so they are
    not asked about; only ``tools/call`` does something.
    """
    handlers: dict[str, Any] = {}
    if capabilities.resources is not None:
        async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
            return await upstream.list_resources(params=params)

        async def list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
            return await upstream.list_resource_templates(params=params)

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
            return await upstream.read_resource(str(params.uri))

        handlers.update(on_list_resources=list_resources, on_list_resource_templates=list_resource_templates,
                        on_read_resource=read_resource)
    if capabilities.prompts is not None:
        async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
            return await upstream.list_prompts(params=params)

        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
            return await upstream.get_prompt(params.name, params.arguments)

        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    return handlers


def _assessed_safe(tool: str, args: dict[str, Any], hints: dict[str, bool] | None) -> bool:
    from ..core.calls.risk import SAFE, assess  # standard library only, like the client

    return assess(tool, args, cwd=os.getcwd(), hints=hints).level == SAFE


class UpstreamGone(Exception):
    """The upstream server closed its side (it exited or crashed): the gate has nothing left to serve."""


class ClientGone(Exception):
    """The MCP client closed our stdin before the upstream server had started: nobody to serve."""


class StoppedBySignal(Exception):
    """SIGTERM, SIGINT or SIGHUP stopped the gate (after the upstream server was stopped too)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class _EndWatcher:
    """The upstream's read stream, telling ``on_end`` when it ends (the server process is gone)."""

    def __init__(self, stream: ReadStream[SessionMessage | Exception], on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _EndWatcher:
        return self

    async def __aenter__(self) -> _EndWatcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


class StdinLines:
    """Our stdin's lines, read without a worker thread, so that stopping the gate is never left
    waiting for a line from a client that has nothing more to say (the SDK's default reader
    blocks a thread in ``read()``, which no cancellation can end)."""

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._buffer = b""
        self._ended = False
        self._was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)

    def restore(self) -> None:
        os.set_blocking(self._fd, self._was_blocking)

    async def until_end(self) -> None:
        """Read ahead (kept for the server) until the client closes its side; returns then. For
        the start-up, when nothing reads our stdin yet but a client that leaves must be noticed."""
        while not self._ended:
            await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                continue
            self._ended = not chunk
            self._buffer += chunk

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._buffer and not self._ended:
            await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                continue
            self._ended = not chunk
            self._buffer += chunk
        if not self._buffer:
            raise StopAsyncIteration
        line, newline, self._buffer = self._buffer.partition(b"\n")
        return (line + newline).decode("utf-8", errors="replace")


def _pollable(fd: int) -> bool:
    """A pipe, socket or terminal (what MCP clients give us); a file or /dev/null cannot be polled."""
    import stat

    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


async def serve_gate(upstream_argv: Sequence[str], approver: Approver, *, allow_read_only: bool = False,
                     name: str = "desktop-approver-gate") -> None:
    """Run the upstream server and serve it, gated, on this process's stdio until the client leaves.

    Raises :class:`UpstreamGone` when the upstream server goes away first (also during its
    start-up), :class:`ClientGone` when the client leaves before the upstream has started, and
    :class:`StoppedBySignal` after SIGTERM, SIGINT or SIGHUP. Whichever way it ends, the upstream
    server is stopped first (the SDK closes its stdin, then terminates it): never left running.
    """
    stdin = StdinLines() if _pollable(0) else None
    stopped: list[int] = []
    failures: list[Exception] = []
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_stop_on_signal, group.cancel_scope, stopped,
                             [signal.Signals[name] for name in STOP_SIGNALS])
            try:
                await _serve_gate(upstream_argv, approver, allow_read_only, name, stdin)
            except Exception as exc:  # noqa: BLE001 - raised below, outside the task group's ExceptionGroup
                failures.append(exc)
            finally:
                group.cancel_scope.cancel()
    finally:
        if stdin is not None:
            stdin.restore()
    if stopped:
        raise StoppedBySignal(stopped[0])
    if failures:
        raise failures[0]


async def _stop_on_signal(scope: anyio.CancelScope, stopped: list[int], signals: list[signal.Signals]) -> None:
    with anyio.open_signal_receiver(*signals) as received:
        async for signum in received:
            stopped.append(signum)
            scope.cancel()  # unwinding stops the upstream server
            return


async def _serve_gate(upstream_argv: Sequence[str], approver: Approver, allow_read_only: bool, name: str,
                      stdin: StdinLines | None) -> None:
    from mcp.shared.exceptions import MCPError

    serving = anyio.CancelScope()
    upstream_gone = False

    def on_upstream_end() -> None:
        nonlocal upstream_gone
        if not serving.cancel_called:  # not our own shutdown
            upstream_gone = True
            serving.cancel()

    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(StdioServerParameters(
            command=upstream_argv[0], args=list(upstream_argv[1:]), env=dict(os.environ), cwd=os.getcwd())))
        upstream = await stack.enter_async_context(ClientSession(_EndWatcher(read, on_upstream_end), write))
        try:
            initialized = await _initialize(upstream, stdin)
        except MCPError as exc:  # "Connection closed": it exited before answering
            raise UpstreamGone(f"the upstream server {upstream_argv[0]!r} ended during its start-up ({exc})") from None
        if initialized is None:
            raise ClientGone("the MCP client went away before the upstream server had started")
        if approver.agent is None:
            approver.agent = f"mcp:{initialized.server_info.name}"
        gate = Gate(upstream, approver, allow_read_only=allow_read_only)
        server: Server[Any] = Server(name, version=initialized.server_info.version,
                                     instructions=initialized.instructions,
                                     on_list_tools=gate.list_tools, on_call_tool=gate.call_tool,
                                     **passed_through(upstream, initialized.capabilities))
        with serving:
            async with stdio_server(stdin=stdin) as (ours_in, ours_out):  # type: ignore[arg-type]  # only iterated
                await server.run(ours_in, ours_out, server.create_initialization_options())
            serving.cancel()  # the client left: the upstream's end from here on is our doing
    if upstream_gone:
        raise UpstreamGone(f"the upstream server {upstream_argv[0]!r} exited")


async def _initialize(upstream: ClientSession, stdin: StdinLines | None) -> types.InitializeResult | None:
    """The upstream's ``initialize`` answer; None when our client closed its side meanwhile (an
    upstream that never answers must not keep the gate, and it, running for nobody)."""
    if stdin is None:  # a file or /dev/null: nothing to watch
        return await upstream.initialize()
    result: list[types.InitializeResult] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:
        async def client_left() -> None:
            await stdin.until_end()
            group.cancel_scope.cancel()

        group.start_soon(client_left)
        try:
            result.append(await upstream.initialize())
        except Exception as exc:  # noqa: BLE001 - raised below, not wrapped in the group's ExceptionGroup
            failure.append(exc)
        group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return result[0] if result else None


# -- Claude Code's --permission-prompt-tool ------------------------------------------------------

PERMISSION_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool_name": {"type": "string", "description": "the tool Claude wants to use"},
        "input": {"type": "object", "description": "the tool's arguments"},
        "tool_use_id": {"type": "string"},
    },
    "required": ["tool_name", "input"],
}


def permission_result(answer: Answer, *, interrupt: bool = False) -> dict[str, Any]:
    """The JSON Claude Code expects back from a permission-prompt tool (``interrupt`` ends the run)."""
    if answer.allowed:
        return {"behavior": "allow", "updatedInput": answer.args}
    if interrupt:
        return {"behavior": "deny", "message": answer.message, "interrupt": True}
    return {"behavior": "deny", "message": answer.message}


class PermissionTool:
    """Serves one tool that asks the app whether Claude Code may use another tool."""

    def __init__(self, approver: Approver) -> None:
        self.approver = approver_or_default(approver, None)

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name=PERMISSION_TOOL, input_schema=PERMISSION_INPUT_SCHEMA,
            description="Ask the person at the desktop (desktop-approver) whether a tool call may run.")])

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        tool, tool_input = arguments.get("tool_name"), arguments.get("input")
        if params.name != PERMISSION_TOOL or not isinstance(tool, str) or not isinstance(tool_input, dict):
            return refusal(f"expected {PERMISSION_TOOL}(tool_name: str, input: object)")
        blocked = False
        try:
            answer = await self.approver.ask_async(tool, tool_input)
        except Blocked as exc:
            answer = Answer(False, dict(tool_input), block_message(exc))
            blocked = True
        text = json.dumps(permission_result(answer, interrupt=blocked))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def serve_permission_tool(approver: Approver) -> None:
    tool = PermissionTool(approver)
    server: Server[Any] = Server(PERMISSION_SERVER, on_list_tools=tool.list_tools, on_call_tool=tool.call_tool)
    async with stdio_server() as (ours_in, ours_out):
        await server.run(ours_in, ours_out, server.create_initialization_options())
