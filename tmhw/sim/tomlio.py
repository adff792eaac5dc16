"""TOML in and out for frozen dataclass config trees.

``to_dict``/``dumps`` turn a config into plain data and TOML text; ``from_dict`` builds a
config class from plain data, checking types by the class's hints and rejecting unknown
keys with the list of valid ones (a key a class lists in its ``MOVED`` mapping names where
it went instead; a key spelt with dashes is the field spelt with underscores). Every error
is a ``ConfigError`` naming the dotted path.
Field types understood: bool, int, float, str, tuples of those, dict[str, number], and
nested dataclasses. A class whose TOML form is not its fields one for one (the
``[policy]`` table, whose sub-tables are the policies' own) defines
``to_toml(self) -> dict`` and a classmethod ``from_toml(data, path, base)``, which may
build its plain fields with ``fields_from_dict``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import types
import typing
from typing import Any, TypeVar

from tmhw.sim.errors import ConfigError

T = TypeVar("T")


def to_dict(cfg: Any) -> dict[str, Any]:
    """A config dataclass as nested plain data (tuples become lists)."""
    custom = getattr(type(cfg), "to_toml", None)
    if custom is not None:
        table: dict[str, Any] = custom(cfg)
        return {k: _plain(v) for k, v in table.items()}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        out[f.name] = _plain(v)
    return out


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return to_dict(v)
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


def dumps(cfg: Any) -> str:
    """TOML text of a config; scalars first, then one table per nested dataclass."""
    lines: list[str] = []
    _dump_table(to_dict(cfg), [], lines)
    return "\n".join(lines).strip() + "\n"


def _dump_table(d: dict[str, Any], prefix: list[str], lines: list[str]) -> None:
    scalars = {k: v for k, v in d.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in d.items() if isinstance(v, dict)}
    if prefix and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in prefix) + "]")
    for k, v in scalars.items():
        lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in tables.items():
        _dump_table(v, prefix + [k], lines)


def _key(k: str) -> str:
    # TOML bare keys are ASCII letters, digits, '_' and '-' only (str.isalnum would let
    # 'é' through bare, which no TOML reader accepts).
    return k if _BARE_KEY.fullmatch(k) else _value(k)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n",
            "\f": "\\f", "\r": "\\r"}


def _escape(ch: str) -> str:
    """One character inside a TOML basic string: control characters must be escaped."""
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"\\u{ord(ch):04X}"
    return ch


def value_text(v: Any) -> str:
    """``v`` as TOML value text, what the value of a ``dotted.path=value`` override is
    (TypeError for what TOML cannot hold)."""
    return _value(v)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return ("-" if v < 0 else "") + ("nan" if math.isnan(v) else "inf")
        return repr(v)
    if isinstance(v, str):
        return '"' + "".join(_escape(ch) for ch in v) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def loads(text: str, where: str = "config") -> dict[str, Any]:
    """Parse TOML text; a syntax error becomes a one-line ConfigError."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(where, "<toml>", f"malformed TOML: {e}") from None


def from_dict(cls: type[T], data: dict[str, Any], path: str = "",
              base: T | None = None) -> T:
    """Build ``cls`` from ``data``; missing fields come from ``base`` (or defaults)."""
    if not isinstance(data, dict):
        raise ConfigError(path or cls.__name__, data, "must be a table")
    custom = getattr(cls, "from_toml", None)
    if custom is not None:
        out: T = custom(data, path, base)
        return out
    return fields_from_dict(cls, data, path, base)


def fields_from_dict(cls: type[T], data: dict[str, Any], path: str = "",
                     base: T | None = None) -> T:
    """``from_dict`` by the class's fields: one key per field, of the field's type."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    # a key spelt with dashes (``hbm-ratio``) is the field spelt with underscores
    data = {(k.replace("-", "_") if k not in fields and k.replace("-", "_") in fields
             else k): v for k, v in data.items()}
    unknown = sorted(set(data) - set(fields))
    moved: dict[str, str] = getattr(cls, "MOVED", {})
    for k in unknown:
        if k in moved:
            raise ConfigError(_join(path, k), data[k],
                              f"moved: set {_join(path, moved[k])} instead")
    if unknown:
        raise ConfigError(_join(path, unknown[0]), data[unknown[0]],
                          f"unknown key; valid keys: {', '.join(sorted(fields))}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        sub_base = getattr(base, name) if base is not None else None
        kwargs[name] = _convert(hints[name], value, _join(path, name), sub_base)
    try:
        if base is not None:
            return dataclasses.replace(base, **kwargs)  # type: ignore[type-var]
        return cls(**kwargs)
    except ConfigError as e:
        raise ConfigError(_join(path, e.path), e.value, e.allowed) from None
    except TypeError as e:
        raise ConfigError(path or cls.__name__, data, f"invalid: {e}") from None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _convert(tp: Any, value: Any, path: str, base: Any = None) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, path, base)  # type: ignore[arg-type]
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(a, value, path, base)
            except ConfigError as e:
                errors.append(e.allowed)
        raise ConfigError(path, value, " or ".join(errors))
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ConfigError(path, value, f"one of {', '.join(map(repr, allowed))}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(path, value, "must be a list")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(path, value, f"must be a list of {len(args)} items")
        return tuple(_convert(a, v, f"{path}[{i}]")
                     for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(path, value, "must be a table")
        _, vt = typing.get_args(tp)
        return {str(k): _convert(vt, v, f"{path}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, value, "must be true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ConfigError(path, value, "must be an integer")
        # TOML integers are 64-bit signed; a bigger one is an error, not a crash later.
        if not -(2**63) <= value < 2**63:
            raise ConfigError(path, value, "an integer in the 64-bit signed range")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, value, "must be a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, value, "must be a string")
        return value
    if tp is Any:
        return value
    raise ConfigError(path, value, f"unsupported field type {tp}")


def parse_override(item: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` to (['a','b','c'], value); the value is read as a TOML value
    (numbers, booleans, quoted strings, lists), else taken as a bare string."""
    if "=" not in item:
        raise ConfigError("--set", item, "must be dotted.path=value")
    key, _, raw = item.partition("=")
    key = key.strip()
    if not key or any(not p for p in key.split(".")):
        raise ConfigError("--set", item, "must be dotted.path=value")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.split("."), value


def nest(overrides: list[tuple[list[str], Any]]) -> dict[str, Any]:
    """Merge dotted overrides into one nested dict."""
    out: dict[str, Any] = {}
    for keys, value in overrides:
        d = out
        for k in keys[:-1]:
            nxt = d.setdefault(k, {})
            if not isinstance(nxt, dict):
                raise ConfigError(".".join(keys), value, "conflicts with another --set")
            d = nxt
        d[keys[-1]] = value
    return out


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of plain dicts (``over`` wins)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def read_text(path: str, option: str = "--config") -> str:
    """The text of the TOML file at ``path``; an unreadable or non-UTF-8 file is a
    one-line ConfigError naming ``option`` and the path."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(option, path, f"cannot read file: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(option, path, f"not UTF-8 text (TOML must be): byte {e.start} "
                          f"is {e.object[e.start:e.start + 1]!r}") from None


def read_toml(path: str, option: str = "--config") -> dict[str, Any]:
    """The TOML file at ``path`` as plain data; an unreadable, non-UTF-8 or malformed file
    is a one-line ConfigError naming ``option`` and the path."""
    text = read_text(path, option)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(option, path, f"malformed TOML: {e}") from None


def section_config(cls: type[T], base: T, section: str, config: str | None,
                   sets: list[str], presets: dict[str, T] | None = None) -> T:
    """``base`` (a device preset of class ``cls``), then the ``[section]`` table of the TOML
    file ``config`` (its ``preset = NAME`` key, if any, starts from ``presets[NAME]``),
    then each ``section.FIELD=VALUE`` of ``sets`` (a bare ``FIELD=VALUE`` too). Every
    error is one ConfigError naming the field and the value; nothing runs before."""
    cfg = base
    if config is not None:
        data = read_toml(config)
        table = data.get(section)
        if not isinstance(table, dict):
            found = ", ".join(f"[{k}]" for k, v in data.items() if isinstance(v, dict))
            raise ConfigError("--config", config, f"needs a [{section}] table (it has "
                              f"{found or 'none'})")
        table = dict(table)
        if "preset" in table and presets is not None:
            name = table.pop("preset")
            if name not in presets:
                raise ConfigError(f"{section}.preset", name, f"one of {', '.join(presets)}")
            cfg = presets[name]
        if not table and cfg is base:
            raise ConfigError("--config", config, f"its [{section}] table sets no field")
        cfg = from_dict(cls, table, section, base=cfg)
    if sets:
        over = []
        for item in sets:
            keys, value = parse_override(item)
            if keys[0] == section and len(keys) > 1:
                keys = keys[1:]
            over.append((keys, value))
        cfg = from_dict(cls, nest(over), section, base=cfg)
    return cfg


def add_section_options(parser: Any, section: str, example: str) -> None:
    """``--config FILE`` and ``--set section.FIELD=VALUE`` on an argparse parser, for
    ``section_config`` (``example``: an override or two to show in the help)."""
    parser.add_argument("--config", default=None, metavar="FILE",
                        help=f"a TOML file whose [{section}] table changes fields of the "
                             "preset (preset = NAME in the table picks another)")
    parser.add_argument("--set", action="append", default=[],
                        metavar=f"{section}.FIELD=VALUE",
                        help=f"change one field, e.g. {example} (repeatable; after "
                             "--config)")
