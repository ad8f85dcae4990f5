"""The errors a user can act on, each one line: ``Fault`` (a command ends on it with ``PROG: error: ...`` and
its ``status``: ``failures.run``), ``OptionError`` (option values the search cannot honour), ``OptionTypeError``.
"""
from __future__ import annotations


class Fault(Exception):
    """A fault the user can act on; its message is one line. ``status``: the exit status."""

    status = 1


class OptionError(Fault, ValueError):
    """A flag value or combination that cannot be honoured; the message is one line, fit for the user."""

    status = 2  # as argparse's own errors


class OptionTypeError(OptionError, TypeError):
    """An option value of the wrong kind (a string for a number, a number for True or False): an ``OptionError``
    and, as Python calls expect of an argument of the wrong kind, a ``TypeError``."""
