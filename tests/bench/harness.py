"""What every benchmark shares: the checkout's code, a clean environment, servers, targets.

The benchmarks run from any directory in a fresh shell (``python tests/bench/<script>.py``): the
code measured is always this checkout's, never an installed copy or the current directory's (a
``python -m`` child would otherwise put its working directory ahead of ``PYTHONPATH``), and no
``DESKTOP_APPROVER_*`` variable of the caller's shell reaches a child; the per-call commands run
as ``bench-agent``, the agent whose call the bench servers remember.

A *target* is a ratio of two figures measured in the same run (the app against a baseline that
does the least any server could), never an absolute time: the machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))

from serve import BENCH_AGENT  # noqa: E402

READY_TIMEOUT = 60.0


def bench_env(root: Path = ROOT, **extra: str) -> dict[str, str]:
    """The environment of every child: this checkout first on the path, offscreen Qt, the bench agent."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("DESKTOP_APPROVER_") and key != "PYTHONPATH"}
    env.update(PYTHONPATH=str(root), QT_QPA_PLATFORM="offscreen", DESKTOP_APPROVER_AGENT=BENCH_AGENT)
    env.update(extra)
    return env


@dataclass
class Server:
    """A bench server in its own process: ``serve.py KIND`` (see there); ``kind`` as asked for."""

    kind: str
    path: str
    process: subprocess.Popen[bytes]
    folder: str

    @property
    def pid(self) -> int:
        return self.process.pid


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """``--kinds`` and ``--against``, as every app-against-echo benchmark takes them."""
    parser.add_argument("--kinds", nargs="*", default=[], metavar="KIND",
                        help="serve.py kinds to measure besides echo and app: core, core-memory-audit")
    parser.add_argument("--against", type=Path, metavar="TREE",
                        help="also measure the app of another checkout (e.g. the commit before a change)")


def server_kinds(options: argparse.Namespace) -> list[str]:
    """echo, app, the ``--kinds`` asked for, and the ``--against`` tree's app."""
    kinds = list(dict.fromkeys(["echo", "app", *options.kinds]))
    if options.against:
        kinds.append(f"app@{options.against.resolve()}")
    return kinds


@contextlib.contextmanager
def server(kind: str) -> Iterator[str]:
    """The socket path of a running ``serve.py KIND``."""
    with servers(kind) as (started,):
        yield started.path


@contextlib.contextmanager
def servers(*kinds: str) -> Iterator[tuple[Server, ...]]:
    """Several bench servers at once (so a baseline and the app can be measured interleaved)."""
    started: list[Server] = []
    try:
        for kind in kinds:
            started.append(_start(kind))
        yield tuple(started)
    finally:
        for each in started:
            _stop(each)


def _start(spec: str) -> Server:
    """``KIND`` runs this checkout's code; ``KIND@DIR`` the same server on the code of the tree at DIR."""
    kind, _, tree = spec.partition("@")
    root = Path(tree).resolve() if tree else ROOT
    folder = tempfile.mkdtemp(prefix="approver-bench-")
    os.chmod(folder, 0o700)
    path = os.path.join(folder, "s.sock")
    log = open(os.path.join(folder, "stderr.log"), "wb")  # noqa: SIM115  (Qt's chatter, shown on failure)
    home = os.path.join(folder, "home")
    os.mkdir(home)
    env = bench_env(root, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                    XDG_DATA_HOME=os.path.join(home, ".local/share"), XDG_STATE_HOME=os.path.join(home, ".local/state"),
                    XDG_RUNTIME_DIR=folder)
    process = subprocess.Popen([sys.executable, str(HERE / "serve.py"), kind, path], stdout=subprocess.PIPE,
                               stderr=log, env=env, cwd=root)
    log.close()
    each = Server(spec, path, process, folder)
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], READY_TIMEOUT)
    line = process.stdout.readline().strip() if readable else b"(nothing in %d s)" % READY_TIMEOUT
    if line != b"ready":
        _stop(each, keep=True)
        raise RuntimeError(f"the {kind} server did not start: {line!r} (its folder: {folder})\n{_log_of(each)}")
    return each


def _log_of(each: Server) -> str:
    try:
        return Path(each.folder, "stderr.log").read_text(errors="replace")[-4000:]
    except OSError:
        return ""


def _stop(each: Server, keep: bool = False) -> None:
    if each.process.poll() is None:
        each.process.terminate()
        try:
            each.process.wait(10)
        except subprocess.TimeoutExpired:
            each.process.kill()
            each.process.wait()
    if each.process.stdout is not None:
        each.process.stdout.close()
    if not keep:
        shutil.rmtree(each.folder, ignore_errors=True)


@dataclass(frozen=True)
class Target:
    """``ratio`` (the app over its baseline, one run) must stay at most / at least ``limit``."""

    name: str
    ratio: float
    limit: float
    at_most: bool = True
    unit: str = "x"

    @property
    def met(self) -> bool:
        return self.ratio <= self.limit if self.at_most else self.ratio >= self.limit

    def shown(self, value: float) -> str:
        if self.unit == "ms":  # a time, for the targets that are a person's wait rather than a ratio
            return f"{value * 1000:.0f} ms"
        return f"{value * 100:.0f}%" if self.unit == "%" else f"{value:.2f}x"

    @property
    def bound(self) -> str:
        return f"{'≤' if self.at_most else '≥'} {self.shown(self.limit)}"

    @property
    def verdict(self) -> str:
        return "met" if self.met else "MISSED"

    def line(self) -> str:
        return f"{self.name}: {self.shown(self.ratio)} (target {self.bound}) {self.verdict}"


def report(targets: list[Target]) -> int:
    """Print each target's line; the exit status is 1 when any was missed."""
    for target in targets:
        print(target.line())
    return 0 if all(target.met for target in targets) else 1


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]
