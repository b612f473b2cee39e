"""Error policies: a table that turns a vendor's exceptions into ACP errors with a next step.

A connector does not grow an if-chain per vendor error. Its single translation function
(``Connector.translate_error``) describes the exception as a :class:`Failure` and hands it to
a table of :class:`Rule` rows; :func:`first_match` reads the table top to bottom and the first
row that matches decides (the Airbyte style: one table, first match wins)::

    from shared import InvalidArguments, ReadOnlyViolation, UpstreamError
    from shared.error_policy import Failure, Rule, first_match

    RULES = (
        Rule(ReadOnlyViolation, "This ACP is read-only: {message}. Send a single SELECT.", codes=("25006",)),
        Rule(InvalidArguments, "PostgreSQL: {message}. Call autocontext to see the tables.", codes=("42P01",)),
        Rule(UpstreamError, "PostgreSQL failed: {message}. Try again or simplify the query."),  # the fallback
    )

    def translate(exc: BaseException) -> AcpError | None:
        if not isinstance(exc, psycopg.Error):
            return None  # another library's exception: not this table's business
        return first_match(RULES, Failure(exc, str(exc), code=exc.sqlstate))

**When a row matches.** Every condition the row sets must hold; a condition holds when any of
its values does:

=============  ===========================================================================
``classes``    the exception is an instance of one of them; a string ``"module.Class"``
               names a class without importing its library (for libraries loaded lazily)
``codes``      :attr:`Failure.code` is one of them: an HTTP status, a SQLSTATE, a MySQL
               error number
``reasons``    one of :attr:`Failure.reasons` is one of them (Google's ``errors[0].reason``,
               its ``ErrorInfo`` reason, its ``status`` name such as ``PERMISSION_DENIED``)
``contains``   :attr:`Failure.message` holds one of these substrings, compared
               case-insensitively (write them in lower case)
``when``       a predicate on the :class:`Failure`, for what the others cannot say
=============  ===========================================================================

A row that sets no condition matches everything: put it last, as the table's fallback.

**The message** is a :meth:`str.format` template over the failure's fields: ``{message}``
always, plus whatever the connector puts in :attr:`Failure.fields` (``{service}``,
``{type}``, …). Format specifications work: ``{message:.200}`` keeps the first 200
characters. Every template says what to do next (spec 12.1). The core redacts known secrets
from every message on its way out, but a template should quote the source's text only where
it helps. ``data`` names fields copied into the error's ``data`` object.

A row whose answer is a ready-made error, such as :func:`shared.errors.timed_out`, is written
``Rule.fixed(timed_out("statement_timeout_s"), classes=(TimeBudgetExceeded,))``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import AcpError


@dataclass(frozen=True)
class Failure:
    """What a rule table sees of one foreign exception."""

    exc: BaseException
    message: str  # the source's own text, as ``{message}`` shows it
    code: int | str | None = None  # HTTP status, SQLSTATE or driver error number
    reasons: frozenset[str] = frozenset()  # machine-readable reasons the source gave
    fields: Mapping[str, Any] = field(default_factory=dict)  # more template values

    @functools.cached_property
    def lowered(self) -> str:
        """The message in lower case, for ``contains`` (computed once per failure)."""
        return self.message.lower()

    def values(self) -> dict[str, Any]:
        """The template values: ``message`` and the connector's fields."""
        return {"message": self.message, **self.fields}


@dataclass(frozen=True)
class Rule:
    """One row of an error table: conditions on a :class:`Failure` → an ACP error and its message."""

    error: type[AcpError]
    message: str  # a str.format template over Failure.values()
    classes: tuple[type[BaseException] | str, ...] = ()
    codes: tuple[int | str, ...] = ()
    reasons: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()
    when: Callable[[Failure], bool] | None = None
    data: tuple[str, ...] = ()  # fields copied into the error's data
    name: str = ""  # names a row so that a table built from it can replace the message

    @classmethod
    def fixed(
        cls,
        error: AcpError,
        *,
        classes: tuple[type[BaseException] | str, ...] = (),
        codes: tuple[int | str, ...] = (),
        reasons: tuple[str, ...] = (),
        contains: tuple[str, ...] = (),
        when: Callable[[Failure], bool] | None = None,
    ) -> Rule:
        """A row whose answer is ``error``'s class and message, word for word (no placeholders)."""
        literal = error.message.replace("{", "{{").replace("}", "}}")
        return cls(type(error), literal, classes=classes, codes=codes, reasons=reasons, contains=contains, when=when)

    def matches(self, failure: Failure) -> bool:
        """Whether every condition this row sets holds for ``failure``."""
        if self.classes and not any(is_instance(failure.exc, c) for c in self.classes):
            return False
        if self.codes and failure.code not in self.codes:
            return False
        if self.reasons and failure.reasons.isdisjoint(self.reasons):
            return False
        if self.contains and not any(part in failure.lowered for part in self.contains):
            return False
        return self.when is None or self.when(failure)

    def build(self, failure: Failure) -> AcpError:
        """This row's error for ``failure``, its message filled in."""
        values = failure.values()
        data = {name: values[name] for name in self.data}
        return self.error(self.message.format_map(values), data or None)


def first_match(rules: Iterable[Rule], failure: Failure) -> AcpError | None:
    """The error of the first row that matches ``failure``; None when no row does."""
    for rule in rules:
        if rule.matches(failure):
            return rule.build(failure)
    return None


def is_instance(exc: BaseException, cls: type[BaseException] | str) -> bool:
    """``isinstance``, where ``cls`` may also be a ``"module.QualName"`` string.

    A string never imports anything: an exception of a class whose module was never imported
    cannot exist, so the check reads the exception's own class hierarchy.
    """
    if isinstance(cls, type):
        return isinstance(exc, cls)
    return any(f"{base.__module__}.{base.__qualname__}" == cls for base in type(exc).__mro__)
