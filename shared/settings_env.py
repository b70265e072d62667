"""Settings as `INGEST_*` environment variables: the prefix, and each field read from and written as text."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

PREFIX = "INGEST_"


def values_from_env(cls: type[Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The fields of the settings dataclass `cls` that `env` sets, parsed to their types."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        raw = env.get(PREFIX + f.name.upper())
        if raw is not None:
            values[f.name] = _parse(raw, f.type, f.name)
    return values


def env_of(settings: Any, *, every_field: bool = False) -> dict[str, str]:
    """The variables that rebuild `settings` (non-default fields only, unless `every_field`)."""
    env: dict[str, str] = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if every_field or value != f.default:
            env[PREFIX + f.name.upper()] = _format(value)
    return env


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse(raw: str, type_name: Any, name: str) -> Any:
    kind = type_name if isinstance(type_name, str) else getattr(type_name, "__name__", str(type_name))
    try:
        if kind == "bool":
            lowered = raw.strip().lower()
            if lowered in {"1", "true", "yes", "on"}:
                return True
            if lowered in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError(raw)
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError as exc:
        raise ValueError(f"{PREFIX}{name.upper()} must be a {kind}, got {raw!r}") from exc
    return raw
