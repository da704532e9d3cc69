"""A GET only reads where the catalog knows the host as one that only serves reads (issue 30, red team F4).

Webhooks and bot APIs act on a GET: Telegram's Bot API takes every method by GET
(``/bot<token>/sendMessage?chat_id=..&text=..`` sends a message), Zapier's catch hooks and IFTTT's
Maker triggers fire on one. A request tool's GET to a host the catalog's ``[web] read_only`` list
does not name is therefore not understood; documentation, registries and code hosts stay
understood, and this machine's own addresses too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.catalog import catalog
from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from tests.support.automatic_answers import PROJECT, ask, broker_for

ACTS = [
    ("http_request", {"url": "https://api.telegram.org/bot123:abc/sendMessage?chat_id=1&text=hi"}),
    ("WebFetch", {"url": "https://hooks.zapier.com/hooks/catch/1/abc/?x=1", "prompt": "x"}),
    ("web_fetch", {"url": "https://maker.ifttt.com/trigger/open_door/with/key/abc"}),
    ("fetch", {"url": "https://api.example.com/v1/jobs/7/cancel"}),
    ("WebFetch", {"url": "https://github.com.evil.example/x", "prompt": "x"}),
]


@pytest.mark.parametrize(("tool", "args"), ACTS)
def test_a_get_to_a_host_not_known_to_only_read_goes_to_the_person(tmp_path: Path, tool: str,
                                                                 args: dict[str, Any]) -> None:
    assert not assess(tool, args, cwd=PROJECT).understood
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, tool, args).decided_by == "user"
    assert person.seen


@pytest.mark.parametrize(("tool", "args"), [
    ("WebFetch", {"url": "https://docs.python.org/3/library/re.html", "prompt": "summarise"}),
    ("web_fetch", {"url": "https://requests.readthedocs.io/en/latest/"}),
    ("fetch", {"url": "https://GitHub.com:443/python/cpython/blob/main/README.rst"}),
    ("http_request", {"url": "http://localhost:8000/health"}),
])
def test_a_get_to_a_host_that_only_reads_is_understood(tool: str, args: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.understood and reading.level in ("safe", "moderate"), reading


def test_the_gap_names_the_host() -> None:
    assert assess("WebFetch", {"url": "https://hooks.zapier.com/x", "prompt": "x"}, cwd=PROJECT).gaps == (
        "a request to `hooks.zapier.com` (the catalog does not know a GET there as only reading)",)
    assert catalog().host_only_reads("docs.rs") and not catalog().host_only_reads("docs.rs.evil.example")
