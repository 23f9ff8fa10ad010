"""Every test: no connection leaves the machine.

Fakes serve on 127.0.0.1; a test that builds a URL from an address a fake handed out (a VM's IP) must
never reach a real network. Every Python socket ``connect`` to an address that is not loopback is
refused with ENETUNREACH (so the code under test sees an unreachable network, as offline) and the
test fails at teardown naming the address. Unix sockets and loopback are untouched.
(Child processes are not covered; tests/unit/test_no_routable_addresses.py checks the literals.)
"""

from __future__ import annotations

import errno
import ipaddress
import socket

import pytest

_attempts: list[str] = []
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _local(address: object) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX path (str/bytes) or something that is not an IP address
    host = str(address[0]).split("%", 1)[0]
    if host in ("localhost", ""):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # a host name: resolving and reaching it is off the machine
    return ip.is_loopback or ip.is_unspecified


def _refuse(address: object) -> OSError:
    _attempts.append(repr(address))
    return OSError(errno.ENETUNREACH, f"tests may not connect off the machine (to {address!r})")


def _connect(self: socket.socket, address: object) -> None:
    if not _local(address):
        raise _refuse(address)
    return _real_connect(self, address)


def _connect_ex(self: socket.socket, address: object) -> int:
    if not _local(address):
        _refuse(address)
        return errno.ENETUNREACH
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _stay_on_this_machine(monkeypatch):
    monkeypatch.setattr(socket.socket, "connect", _connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _connect_ex)
    _attempts.clear()
    yield
    tried, _attempts[:] = list(_attempts), []
    assert not tried, f"the test tried to connect off the machine: {', '.join(tried)}"
