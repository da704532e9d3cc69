"""A scripted Anthropic Messages API on loopback, for the real Claude Code CLI (bundled with the
Claude Agent SDK) in tests: no network, no key, no model.

The "model" plays a fixed list of tool calls, one per turn, then says "done". Each answer is
chosen by how many tool results the conversation already holds, so Claude Code's retries and side
questions (a request without tools) get a plain text answer and never move the script on.
Claude Code streams (``"stream": true``): the answer is written as the API's server-sent events.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["ScriptedApi"]


class ScriptedApi:
    """``with ScriptedApi([("Bash", {"command": "touch a"}), ...]) as api:`` then point Claude Code at
    ``api.url`` (``ANTHROPIC_BASE_URL``)."""

    def __init__(self, tool_calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.tool_calls = tool_calls
        self.requests: list[dict[str, Any]] = []
        script = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                script.requests.append(body)
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._json({"input_tokens": 1})
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in script.events(body):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

            def do_GET(self) -> None:
                self.send_response(404)
                self.end_headers()

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ScriptedApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def events(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The streamed answer to one request: the next scripted tool call, or "done"."""
        results = sum(1 for message in body.get("messages") or [] if isinstance(message.get("content"), list)
                      for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result")
        has_tools = bool(body.get("tools"))
        yield {"type": "message_start", "message": {
            "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}
        if has_tools and results < len(self.tool_calls):
            tool, tool_input = self.tool_calls[results]
            yield {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": f"toolu_{results}", "name": tool, "input": {}}}
            yield {"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": json.dumps(tool_input)}}
            stop = "tool_use"
        else:
            yield {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
            yield {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}}
            stop = "end_turn"
        yield {"type": "content_block_stop", "index": 0}
        yield {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
               "usage": {"output_tokens": 1}}
        yield {"type": "message_stop"}
