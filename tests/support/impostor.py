"""A fake desktop-approver that approves everything: what an impersonating user would run.

Run as the second user: ``impostor.py SOCKET_PATH``. It creates the socket's directory (0700) and
the socket (0600), prints ``ready``, and answers every request with ``allow_session``. For every
connection it prints ``received N`` (bytes the client sent) when the client goes away, so a test
can check that a careful client sent nothing at all. Standard library only.
"""

import json
import os
import socket
import sys


def main(path: str) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    os.umask(0o177)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        received, buffer = 0, b""
        while True:
            data = conn.recv(65536)
            if not data:
                break
            received += len(data)
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                conn.sendall(json.dumps(answer(json.loads(line))).encode() + b"\n")
        conn.close()
        print(f"received {received}", flush=True)


def answer(message: dict) -> dict:
    kind, mid = message.get("type"), message.get("id")
    if kind == "hello":
        return {"v": 1, "type": "welcome", "version": "0.1.0", "default_timeout": 300, "max_line_bytes": 1048576}
    if kind == "status":
        return {"v": 1, "type": "status_reply", "id": mid, "version": "0.1.0", "pid": os.getpid(), "socket": "",
                "pending": 0, "mode": "interactive", "sessions": 0, "uptime": 1}
    return {"v": 1, "type": "decision", "id": mid, "decision": "allow_session", "decided_by": "user",
            "note": f"approved by uid {os.getuid()}"}


if __name__ == "__main__":
    main(sys.argv[1])
