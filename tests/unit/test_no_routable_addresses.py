"""Tests send nothing off the machine: no IPv4 literal in tests/, src/ or benchmarks/ reaches a real network.

Every address written in the code or its fixtures is loopback, the unspecified 0.0.0.0 (a bind address),
or in a documentation range (RFC 5737: 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24), which no network
routes. Private ranges (10/8, 172.16/12, 192.168/16) are refused too: they reach whatever LAN the machine
is on. The allow-list names the few addresses that must be real, with the reason.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "tests", "benchmarks")
THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
DOCUMENTATION = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]
ALLOWED = {
    # Google's metadata server is link-local: the VM boot script's fetch_secret asks it for a token.
    "169.254.169.254": "GCE metadata server (link-local, only on the VM)",
    "35.235.240.0": "Google IAP TCP forwarding's source range (a firewall rule's CIDR, never connected to)",
}
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?!\.?\d)")


def harmless(text: str) -> bool:
    try:
        ip = ipaddress.IPv4Address(text)
    except ValueError:
        return True  # 999.1.2.3 or a version number: not an address
    # 0.0.0.0/8 ("this network") is never routed; in practice it is a version number such as vLLM 0.10.1.1.
    return (ip.is_loopback or ip in THIS_NETWORK or any(ip in net for net in DOCUMENTATION)
            or text in ALLOWED)


def routable_literals(root: Path) -> list[str]:
    found = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            data = path.read_bytes()
            if b"\0" in data[:4096]:
                continue  # binary
            text = data.decode("utf-8", errors="replace")
            for n, line in enumerate(text.splitlines(), 1):
                found += [f"{path.relative_to(root)}:{n}: {m}" for m in _IPV4.findall(line) if not harmless(m)]
    return found


def test_no_routable_ipv4_literal_in_the_tree():
    found = routable_literals(ROOT)
    assert not found, "use 127.0.0.x or 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 instead:\n" + "\n".join(found)


def test_the_scan_finds_what_it_must(tmp_path):
    vm, lan = ".".join(("34", "9", "8", "7")), ".".join(("10", "0", "0", "5"))  # not literals in this file
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(
        f'VM = "{vm}"\nLAN = "http://{lan}:8000"\nok = ["127.0.0.1", "0.0.0.0", "192.0.2.7", "203.0.113.0/24"]\n'
        'version = "1.2.3"\nmeta = "169.254.169.254"\n'
    )
    assert routable_literals(tmp_path) == [f"tests/t.py:1: {vm}", f"tests/t.py:2: {lan}"]


def test_a_connection_off_the_machine_is_refused_and_reported():
    import errno
    import socket

    from tests.conftest import _attempts

    with socket.socket() as s, pytest.raises(OSError) as info:
        s.connect(("198.51.100.9", 8000))  # a documentation address: nothing may be sent even there
    assert info.value.errno == errno.ENETUNREACH
    assert _attempts == ["('198.51.100.9', 8000)"]
    import asyncio

    import httpx

    async def get() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            await client.get("http://198.51.100.7:8000/health")

    with pytest.raises(httpx.ConnectError):
        asyncio.run(get())  # the asyncio path (what VLLMClient uses) is guarded too
    assert _attempts[1:] == ["('198.51.100.7', 8000)"]
    _attempts.clear()  # the guard would fail this test at teardown otherwise
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.socket() as s:
            s.connect(server.getsockname())  # loopback is fine
