"""Where an address points (:mod:`desktop_approver.core.calls.risk.addresses`)."""

from __future__ import annotations

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.calls.risk.addresses import host_of, is_local


@pytest.mark.parametrize(("address", "local"), [
    ("http://localhost:3000/api", True),
    ("localhost:8080/x", True),
    ("http://127.0.0.1/x", True),
    ("http://[::1]:9000/", True),
    ("http://app.localhost/", True),
    ("http://localhost@evil.example/", False),       # a user name, then the real host
    ("http://127.0.0.1.nip.io/", False),             # resolves here, but only by a name server's say
    ("https://api.example.com/items", False),
    ("http://0x7f000001/", False),
])
def test_an_address_is_local_only_when_it_says_so_itself(address: str, local: bool) -> None:
    assert is_local(address) is local, host_of(address)


def test_a_tool_that_sends_to_another_host_is_destructive_and_to_this_machine_moderate() -> None:
    remote = assess("http_request", {"url": "https://api.example.com/x", "method": "POST", "body": "{}"}, cwd="/w/p")
    here = assess("http_request", {"url": "http://localhost:3000/x", "method": "POST", "body": "{}"}, cwd="/w/p")
    assert remote.level == "destructive" and here.level == "moderate"
    assert "sends a request that acts outside the machine (POST to api.example.com)" in remote.reasons
