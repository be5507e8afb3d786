"""Access logs without secrets: the values of secret query parameters are blanked."""
from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

ACCESS_LOGGERS = ("werkzeug", "gunicorn.access")


def redact_access_logs() -> None:
    """Put ``RedactSecrets`` on the access loggers of the development server and gunicorn
    (once per process: loggers are global, apps are not)."""
    for name in ACCESS_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())


class RedactSecrets(logging.Filter):
    """Blank the values of secret parameters (``password=...``, an event password tried in a query
    string) in access log lines.

    Each query string in the line is split into its parameters; a parameter whose decoded name
    (``password``, ``pass``, ``pwd``, ``token``, also with ``[...]`` after it) is secret has its
    whole value replaced, whatever characters the value holds.
    """

    SECRET_NAMES = frozenset({"password", "pass", "pwd", "token"})
    QUERY = re.compile(r"\?(\S*?)(\"?)(?=\s|$)")

    def _redact_query(self, found: re.Match) -> str:
        parts = []
        for part in found.group(1).split("&"):
            name, sep, _ = part.partition("=")
            key = unquote_plus(name).split("[", 1)[0].strip().lower()
            parts.append(f"{name}=[redacted]" if sep and key in self.SECRET_NAMES else part)
        return "?" + "&".join(parts) + found.group(2)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "?" in message:
            redacted = self.QUERY.sub(self._redact_query, message)
            if redacted != message:
                record.msg, record.args = redacted, ()
        return True
