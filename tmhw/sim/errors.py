"""Errors that reach the user as one line: configuration and elaboration failures."""

from __future__ import annotations


class TmhwError(Exception):
    """Base of every error tmhw reports to the user as a single line (exit status 2)."""


class ConfigError(TmhwError, ValueError):
    """A configuration value is invalid. The message names the dotted field path,
    the value, and what is allowed."""

    def __init__(self, path: str, value: object, allowed: str) -> None:
        self.path = path
        self.value = value
        self.allowed = allowed
        super().__init__(f"{path} = {value!r}: {allowed}")


class ElaborationError(TmhwError):
    """A component could not be wired: unbound port, inconsistent sizes. Names the path."""


class DoesNotFit(TmhwError):
    """The configuration is valid, but the policy cannot run in the HBM it is given: an
    op's operands, or what the policy must keep resident, exceed the capacity. A result,
    not a mistake: sweeps and studies record it as status ``does-not-fit`` with this
    message, and ``tmhw`` prints one line and exits with status 3."""
