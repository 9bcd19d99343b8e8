"""Keep secrets out of lineage facets.

Three rules, applied to everything the emit hook copies from the manifest or the run into an
event:

* URI user-info is never forwarded: :func:`strip_userinfo` removes it from dataset identities
  (an OpenLineage namespace names a datasource, never an account), :func:`mask_text` replaces it
  with ``***`` inside free text.
* Values whose key looks secret (``password``, ``secret``, ``token``, ``key``, ...) are replaced by
  :data:`MASK`, at any depth (:func:`mask_params`). The rule is deliberately broad: a
  ``partition_key`` parameter is masked too, because a lost provenance detail costs less than a
  leaked credential.
* Free text (error messages, stack traces) is scrubbed of ``user:password@`` in URIs, of
  query-string credentials (a signed URL's ``sig=``, ``X-Amz-Signature=``, ``X-Goog-Signature=``,
  ``token=``…, :func:`is_query_credential`) and of ``<secret-like key>=<value>`` pairs; when the
  Airflow task SDK is importable, its secrets masker (which knows every connection password and
  variable the task touched) runs as well.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "is_query_credential",
    "is_secret_key",
    "mask_params",
    "mask_text",
    "mask_uri_credentials",
    "strip_userinfo",
]

#: Replacement for a masked value.
MASK: str = "***"

# Substrings that mark a key as secret wherever they appear ("dbPassword", "client_secret").
_SECRET_SUBSTRINGS: tuple[str, ...] = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "credential",
)
# Whole words that mark a key as secret ("key", "api_key", "sshKey", "pwd", "auth").
_SECRET_WORDS: frozenset[str] = frozenset(
    {"key", "keys", "pwd", "auth", "authorization", "dsn"}
)

# A key split into words at separators and camelCase boundaries.
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# scheme://user[:password]@  (user-info of any URI inside free text)
_USERINFO_IN_TEXT = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/@'\"<>]+)@"
)

# The query-string credentials of ADR 0027, the compiler's list (compiler/support/secrets.ts,
# QUERY_CREDENTIAL_NAMES and QUERY_CREDENTIAL_PARTS): a name, percent-decoded, lower-cased and
# without "-", "_" and ".", that is one of these ...
_QUERY_CREDENTIAL_NAMES: frozenset[str] = frozenset({"sig", "awsaccesskeyid", "googleaccessid", "pwd", "key"})
# ... or contains one of these.
_QUERY_CREDENTIAL_PARTS: tuple[str, ...] = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "signature",
    "credential",
    "token",
    "apikey",
)
# ?name=value or &name=value inside any text; the value ends where a URI, a quoted string or a
# sentence would.
_QUERY_PAIR = re.compile(r"(?P<lead>[?&](?P<name>[^=&#\s\"'<>\\]+)=)(?P<value>[^&#\s\"'<>\\,;)\]}]*)")

# <secret-like key> = value  or  <secret-like key>: value  (quoted or bare value)
_SECRET_ASSIGNMENT = re.compile(
    r"(?P<key>\b[\w.\-]*(?:password|passwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key|"
    r"private[_\-]?key|credential)[\w.\-]*)"
    r"(?P<sep>['\"]?\s*[=:]\s*)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;&)\]}\"']+)",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """Tell whether a parameter name looks like it holds a secret.

    :param key: A mapping key, in any case style (``api_key``, ``apiKey``, ``API-KEY``).
    :returns: True when the key contains a secret-like substring or word.
    """
    lowered = key.lower()
    if any(
        part in lowered.replace("_", "").replace("-", "") for part in _SECRET_SUBSTRINGS
    ):
        return True
    words = {word.lower() for word in _WORD.findall(key)}
    return bool(words & _SECRET_WORDS)


def is_query_credential(name: str) -> bool:
    """Tell whether a URI query parameter carries a credential (ADR 0027).

    The runtime masks more than the compiler refuses: ``key`` is masked whatever its value (the
    compiler refuses it only when it holds a Google API key), as :func:`is_secret_key` masks a
    ``key`` parameter.

    :param name: The parameter name as written (``X-Amz-Signature``, ``sig``, ``X%2DAmz%2DSignature``).
    :returns: True for a signed URL's signature or credential, a token, a password, a secret, an
        API key.
    """
    folded = unquote_plus(name).lower().replace("-", "").replace("_", "").replace(".", "")
    return folded in _QUERY_CREDENTIAL_NAMES or any(part in folded for part in _QUERY_CREDENTIAL_PARTS)


def strip_userinfo(uri: str) -> str:
    """Remove ``user[:password]@`` from a URI, keeping everything else byte for byte.

    :param uri: Any string; strings without ``://`` are returned unchanged.
    :returns: The URI without user-info.
    """
    if "://" not in uri or "@" not in uri:
        return uri
    try:
        parts = urlsplit(uri)
    except ValueError:
        return _USERINFO_IN_TEXT.sub(lambda m: m.group("scheme"), uri)
    if "@" not in parts.netloc:
        return uri
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def mask_text(text: str) -> str:
    """Mask credentials inside free text (messages, stack traces, parameter values).

    :param text: Any text.
    :returns: The text with URI user-info, query-string credentials (:func:`is_query_credential`)
        and secret-like assignments replaced by :data:`MASK`, then passed through Airflow's
        secrets masker when that is available.
    """
    masked = _SECRET_ASSIGNMENT.sub(
        lambda m: f"{m.group('key')}{m.group('sep')}{MASK}", mask_uri_credentials(text)
    )
    return _airflow_redact(masked)


def mask_uri_credentials(text: str) -> str:
    """Mask the credentials a URI carries inside any text: user info and query-string credentials.

    The narrow part of :func:`mask_text`, for messages that also name data (columns, values) a
    ``<secret key>: value`` rule would blank: the producers' errors (``ProducerError``).

    :param text: Any text.
    :returns: The text with ``scheme://user:password@`` as ``scheme://***@`` and the value of
        every ``?name=value`` / ``&name=value`` whose name :func:`is_query_credential` as ``***``
        (``…?sv=2022&sig=***``).
    """
    masked = _USERINFO_IN_TEXT.sub(lambda m: f"{m.group('scheme')}{MASK}@", text) if "://" in text else text
    if "=" in masked:
        masked = _QUERY_PAIR.sub(
            lambda m: f"{m.group('lead')}{MASK}" if m.group("value") and is_query_credential(m.group("name")) else m.group(0),
            masked,
        )
    return masked


def mask_params(value: Any) -> Any:
    """Return a copy of a JSON-like value with secrets masked.

    :param value: A mapping, list or scalar (producer ``params``).
    :returns: The same shape; values under secret-looking keys are :data:`MASK`, strings have
        their URI user-info masked (:func:`mask_text`).
    """
    if isinstance(value, Mapping):
        return {
            str(key): (MASK if is_secret_key(str(key)) else mask_params(item))
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [mask_params(item) for item in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def _airflow_redact(text: str) -> str:
    """Run Airflow's task secrets masker over ``text`` inside an Airflow task process.

    Only when the task SDK is already imported: outside Airflow (tests, tools) importing it
    would cost seconds and its masker would know no secrets anyway.
    """
    if "airflow.sdk" not in sys.modules:
        return text
    try:
        from airflow.sdk._shared.secrets_masker import redact
    except Exception:  # noqa: BLE001 - Airflow absent or its layout changed: our rules apply
        return text
    try:
        redacted = redact(text)
    except Exception:  # noqa: BLE001 - a masker bug must not cost the event
        return text
    return redacted if isinstance(redacted, str) else text
