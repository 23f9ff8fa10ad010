"""Credentials written into URLs and command lines never leave the process that was given them.

A user may reach a server as ``http://user:pass@host`` (basic auth behind a proxy) or
``https://host/?token=...``; the URL with its credentials is needed to connect, but everything that
*shows or stores* a URL or a command line (run metadata, reports, status output, error messages, MCP
replies) goes through this module first:

======================  =====================================================================
``redact_url(url)``     userinfo -> ``***``, the value of token-like query parameters -> ``***``
``redact_argv(argv)``   every URL in every argument, and the value after a secret-named flag
``redact_text(text)``   every URL found in free text (error messages that quote a URL)
======================  =====================================================================

The whole userinfo is replaced, user name included: some services take a token as the user name.
A redacted URL keeps scheme, host, port, path and the other parameters, so it still says which
server was meant. The functions are idempotent and never raise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

# Query parameter and flag names whose value is a credential (compared lower-case, "-" as "_").
_SECRET_NAMES = frozenset({
    "token", "key", "api_key", "apikey", "access_token", "id_token", "refresh_token", "auth", "authorization",
    "sig", "signature", "secret", "client_secret", "password", "passwd", "pass", "pwd", "credential",
    "credentials", "session", "x_amz_signature", "x_amz_security_token", "x_goog_signature", "code",
})
_SECRET_SUFFIXES = ("_token", "_key", "_secret", "_password", "_signature", "_sig")
# A URL inside other text: scheme://, then anything up to whitespace or a quote/bracket that ends it.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


def _secret_name(name: str) -> bool:
    n = name.strip().lower().lstrip("-").replace("-", "_")
    return n in _SECRET_NAMES or n.endswith(_SECRET_SUFFIXES)


def redact_url(url: str) -> str:
    """``url`` without its credentials: userinfo and token-like query values become ``***``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(_secret_name(k) for k, _ in pairs):
                query = urlencode([(k, MASK if _secret_name(k) else v) for k, v in pairs], safe="*")
        if netloc == parts.netloc and query == parts.query:
            return url
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # not parseable as a URL (e.g. a bad IPv6 literal): hide everything after the scheme
        scheme, sep, _ = url.partition("://")
        return f"{scheme}://{MASK}" if sep else url


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (for messages that quote a URL)."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line safe to store: URLs redacted, values of secret-named flags replaced.

    ``--token X``, ``--api-key=X`` and the like lose their value; inferctl's own flags only ever hold
    the *name* of an environment variable (``--token-env``), which is kept.
    """
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-") and "=" in arg:
            flag, value = arg.split("=", 1)
            out.append(f"{flag}={MASK}" if _secret_name(flag) else f"{flag}={redact_text(value)}")
            continue
        if arg.startswith("--") and _secret_name(arg):
            hide_next = True
        out.append(redact_text(arg))
    return out
