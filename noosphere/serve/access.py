"""Who may reach a server: loopback freely, any other address only with an API key."""

from __future__ import annotations

import ipaddress

from noosphere.errors import UsageError

API_KEY_ENV = "NOOSPHERE_API_KEY"
MIN_KEY_CHARS = 8
"""As `Redactor`, which redacts no secret shorter (it would blank ordinary words of every trace)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, api_key: str | None) -> None:
    """A server reachable from other machines must ask for a key: its runs spend the owner's compute and money,
    and their traces keep the prompts."""
    if not is_loopback(host) and not api_key:
        raise UsageError(f"--host {host} lets other machines in: give --api-key KEY (or set {API_KEY_ENV}), "
                         "which clients then send as their API key")
    if api_key is not None and len(api_key) < MIN_KEY_CHARS:
        raise UsageError(f"--api-key needs {MIN_KEY_CHARS} characters or more: a shorter one is easily guessed, and "
                         "the traces could not tell it from ordinary words to redact it")
