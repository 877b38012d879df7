"""Redaction of secrets before anything is written: API keys from the environment, key-shaped strings and
the signatures of signed URLs."""

from __future__ import annotations

import os
import re

_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_SECRET_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}|xai-[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|Bearer\s+[A-Za-z0-9._\-]{16,})"
)
_SIGNED_URL_PARAMS = re.compile(
    r"((?:[?&]|&amp;)(?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature|x-goog-credential|token"
    r"|access_token|api_key|key|client_secret|password)=)[^&\s\"'<>\\]+", re.IGNORECASE)
"""The query parameters that make a URL a credential: an image provider's signed link, a key in a URL. The
value ends before a backslash too, since the text redacted is JSON, where a quote is escaped as `\\"`; a
parameter may follow `&amp;`, as in a link copied out of HTML."""
_URL_CREDENTIALS = re.compile(r"([a-z][a-z0-9+.\-]{0,31}://)[^/\s\"'<>@:\\]+:[^/\s\"'<>@\\]+@", re.IGNORECASE)
"""A user and password written into a URL (`https://user:pass@host/v1`): both go, the scheme and host stay. The scheme
is bounded (the last 32 characters before `://` are enough to find one): unbounded, every letter of a long run of
them (a DNA sequence, a hash, a base32 blob in a prompt) began a scan to the run's end, quadratic in its length."""
REDACTED = "[REDACTED]"


class Redactor:
    """Replaces secret values (from the environment, or given) and key-shaped strings."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self.secrets = tuple(sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True))

    @classmethod
    def from_environment(cls, extra: tuple[str, ...] = ()) -> Redactor:
        # Paths and sentences under such names (a key *file*, say) are not secrets themselves; a base64 secret
        # may hold a "/" (AWS_SECRET_ACCESS_KEY), so only a value that names an existing path is one.
        found = tuple(value for name, value in os.environ.items()
                      if _SECRET_ENV.search(name) and not any(c.isspace() for c in value)
                      and not _is_path(value))
        return cls(found + extra)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        text = _SIGNED_URL_PARAMS.sub(rf"\g<1>{REDACTED}", text)
        text = _URL_CREDENTIALS.sub(rf"\g<1>{REDACTED}@", text)
        return _SECRET_SHAPES.sub(REDACTED, text)


def _is_path(value: str) -> bool:
    try:
        return ("/" in value or "\\" in value) and os.path.exists(value)
    except (OSError, ValueError):
        return False
