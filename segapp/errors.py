"""Exceptions raised by segapp: one hierarchy so callers (CLI, GUI) can catch them all."""

from __future__ import annotations


class SegappError(Exception):
    """Base class of every error segapp raises on purpose."""


class InvalidInputError(SegappError, ValueError):
    """An image, scribble map or option that cannot be used (the message says which and why)."""


class SolverError(SegappError, RuntimeError):
    """The eigensolver did not converge or produced non-finite values.

    ``diagnostics`` holds the solver's report (iterations, residuals) when there is one.
    """

    def __init__(self, message: str, diagnostics: object | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


class Cancelled(SegappError):
    """A solve was cancelled by its caller (a newer edit superseded it)."""


class SlowSolverWarning(UserWarning):
    """segapp runs a slower path than it could: the direct solver is missing here (said once
    per process, with the command that installs it)."""
