"""Typed readers for settings held in environment variables; bad values fail loudly.

Example:
    >>> import os
    >>> os.environ["FAULTLINE_EXAMPLE"] = "yes"
    >>> env_bool("FAULTLINE_EXAMPLE", False)
    True
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


class SettingError(ValueError):
    pass


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of a fixed set of words.

    >>> env_choice("FAULTLINE_UNSET_EXAMPLE", "b", ("a", "b"))
    'b'
    """
    value = os.environ.get(name, default).strip() or default
    if value not in choices:
        raise SettingError(f"{name}={value!r} is not one of: {', '.join(choices)}.")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingError(f"{name}={raw!r} is not a boolean (use one of: 1, 0, true, false).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not a whole number.") from None
    if minimum is not None and value < minimum:
        raise SettingError(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not a number.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str, *, base_dir: str) -> dict[str, object]:
    """Django DATABASES entry from a URL: sqlite:///path or postgres://user:pw@host:port/db.

    >>> database_from_url("postgres://u:p@127.0.0.1:5433/fl", base_dir="/x")["PORT"]
    '5433'
    """
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        # sqlite:///relative/path and sqlite:////absolute/path, as most tools read them.
        path = unquote(url[len("sqlite:///") :]) if url.startswith("sqlite:///") else ""
        path = path or "db.sqlite3"
        if not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        path = os.path.normpath(path)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                # WAL lets the web server read while the worker writes a file.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    if parsed.scheme in {"postgres", "postgresql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 60,
            # A kept connection is checked before its first use in each request or task,
            # so one the server dropped (a restart) is replaced instead of failing it.
            "CONN_HEALTH_CHECKS": True,
        }
    raise SettingError(
        f"DATABASE_URL scheme {parsed.scheme!r} is not supported (sqlite, postgres)."
    )


#: Where `make run` (scripts/run.sh) writes the queue and cache URLs its instance uses.
INSTANCE_ENV = Path("run") / "instance.env"
_INSTANCE_KEYS = ("FAULTLINE_BROKER_URL", "FAULTLINE_RESULT_BACKEND", "FAULTLINE_CACHE_URL")


def instance_env(var_dir: Path) -> dict[str, str]:
    r"""The URLs the `make run` of ``var_dir`` uses (empty when none ran there): a command run
    with only FAULTLINE_VAR_DIR set (the CLI beside a `make run` on other ports) reaches
    the same queue and cache, as it reaches the same database. Lines ``KEY=value``; keys
    other than the three URLs are ignored.

    >>> import tempfile
    >>> var = Path(tempfile.mkdtemp())
    >>> (var / "run").mkdir()
    >>> _ = (var / INSTANCE_ENV).write_text("FAULTLINE_BROKER_URL=redis://127.0.0.1:6471/0\n"
    ...                                     "FAULTLINE_CACHE_URL=\nOTHER=x\n")
    >>> instance_env(var)
    {'FAULTLINE_BROKER_URL': 'redis://127.0.0.1:6471/0', 'FAULTLINE_CACHE_URL': ''}
    """
    try:
        text = (var_dir / INSTANCE_ENV).read_text(encoding="utf-8")
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in _INSTANCE_KEYS:
            found[key.strip()] = value.strip()
    return found
