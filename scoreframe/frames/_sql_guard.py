r"""One guard for every ``where=`` / ``--where`` predicate: one SQL expression, columns only.

A predicate is parsed by polars (:func:`polars.sql_expr`) as an expression, never pasted into a
statement. Polars' SQL parser also plans subqueries while it parses, and a subquery may read a
file (``a IN (SELECT * FROM read_csv('/etc/passwd'))``): its column names, even its values,
would reach an error message. So the text is first scanned here, token by token, and refused
before polars sees it when it holds anything that is not part of a plain expression:

* a ``;`` (stacked statements), a comment (``--``, ``/*``), which could hide the rest;
* a subquery: ``SELECT`` anywhere, or a word that opens a query (``FROM``, ``WITH``, ``VALUES``,
  ``VALUE``, ``TABLE``, ``INSERT``, ``UPDATE``, ``DELETE``, ``MERGE``) right after ``(``;
* characters that change how other SQL dialects split the text (``$``, backquotes, brackets,
  braces, ``#``, ``?``, ``\\`` outside quotes) and prefixed strings (``E'...'``, ``X'...'``).

The scanner splits quoted text exactly as polars does (``'it''s'`` and ``"col""name"`` double
their quote; a backslash is an ordinary character), so nothing it takes as quoted is code for
polars. Polars' expression functions cannot read files; a parsed expression that still holds a
subquery is refused as well. Messages quote at most 80 characters of the predicate.
"""

from __future__ import annotations

import re

import polars as pl

from scoreframe.errors import Place, ScoreframeError, message

__all__ = ["apply_where", "check_where", "where_expr"]

#: Longest predicate accepted (characters); a long ``IN (...)`` list stays far below it.
MAX_WHERE_CHARS = 1_000_000

#: Most operators in a predicate: polars' parser recurses once per operator of a chain such as
#: ``a OR b OR ...`` and crashes (stack overflow) near a few thousand; a long ``IN (...)`` list
#: counts as one.
MAX_OPERATORS = 256

_OPERATOR_WORDS = frozenset({"and", "or", "not", "is", "in", "like", "ilike", "between",
                             "similar", "regexp", "rlike"})
#: Words that start a query (a subquery) when they follow ``(``.
_QUERY_WORDS = frozenset({"select", "from", "with", "values", "value", "table", "insert",
                          "update", "delete", "merge"})
#: Words that start a statement: named in the message when such text fails to parse.
_STATEMENT_WORDS = frozenset({
    "alter", "analyze", "attach", "call", "checkpoint", "copy", "create", "deallocate",
    "delete", "describe", "detach", "drop", "execute", "explain", "export", "grant", "import",
    "insert", "install", "load", "merge", "pivot", "pragma", "prepare", "reset", "select",
    "set", "show", "summarize", "truncate", "unpivot", "update", "use", "vacuum", "with"})

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<comment>--|/\*)
  | (?P<string>'[^']*(?:''[^']*)*')
  | (?P<ident>"[^"]*(?:""[^"]*)*")
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>[^\W\d]\w*)
  | (?P<open>\()
  | (?P<op>[-+*/%=<>!~^&|@.,:)])
""", re.VERBOSE)

_HINT = ("A predicate is one SQL expression over the columns of the trials, e.g. "
         "gender = 'f' AND score > 0; see docs/sql.md.")


def _quote(text: str, limit: int = 80) -> str:
    """``text`` quoted on one line, cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _refuse(what: str, where: str, *, source: str | None, hint: str = _HINT) -> ScoreframeError:
    on = f" for {source}" if source and not isinstance(source, Place) else ""
    return ScoreframeError(message(f"the where= / --where predicate{on} {what}",
                                   got=_quote(where), hint=hint,
                                   path=source.path if isinstance(source, Place) else None))


def _scan(where: str, *, source: str | None) -> str | None:
    """Refuse what cannot be part of one plain expression.

    Returns the first word (lowercase) when the text starts like a statement: a word followed
    by a word or a quoted string (``COPY trials ...``, ``ATTACH 'x'``), else None.
    """
    pos, word_end, after_open, operators = 0, -1, False, 0
    kinds: list[str] = []
    first: str | None = None
    while pos < len(where):
        m = _TOKEN.match(where, pos)
        if m is None:
            ch = where[pos]
            if ch == ";":
                raise _refuse("must be one expression; `;` would start a second statement",
                              where, source=source)
            if ch in "'\"":
                raise _refuse(f"has an unterminated quote (at character {pos + 1})", where,
                              source=source)
            raise _refuse(f"has the character {ch!r} (at character {pos + 1}), which is not "
                          "part of an expression", where, source=source,
                          hint="Quote names with double quotes and text with single quotes. "
                               + _HINT)
        kind, text, start, pos = m.lastgroup, m.group(), m.start(), m.end()
        if kind == "ws":
            continue
        if kind == "comment":
            raise _refuse("has a comment; comments are not allowed in a predicate", where,
                          source=source)
        if kind == "string" and start == word_end:
            raise _refuse("has a prefixed string such as E'...' or X'...'; use a plain "
                          "'...' string", where, source=source)
        if len(kinds) < 2:
            kinds.append(kind or "")
        operators += (kind == "op" and text not in ",).:") or (
            kind == "word" and text.lower() in _OPERATOR_WORDS)
        if kind == "word":
            low = text.lower()
            first = first or low
            word_end = pos
            if low == "select" or (after_open and low in _QUERY_WORDS):
                raise _refuse("has a subquery; a predicate sees only the columns of the "
                              "trials, never another table or a file", where, source=source)
        after_open = kind == "open"
    if operators > MAX_OPERATORS:
        raise _refuse(f"has {operators} operators, over the limit of {MAX_OPERATORS}", where,
                      source=source, hint="Write a long list of alternatives as "
                                          "column IN ('a', 'b', ...). " + _HINT)
    starts_like_statement = kinds[:1] == ["word"] and kinds[1:2] in (["word"], ["string"],
                                                                      ["ident"])
    return first if starts_like_statement else None


def where_expr(where: str, *, source: str | None = None) -> pl.Expr:
    """The polars expression of one SQL predicate, refused when it is anything else.

    Parameters
    ----------
    where
        One SQL expression over the columns, e.g. ``"gender = 'f' AND score > 0"``.
    source
        How messages name the data (e.g. ``"dataset `ds/`"``).

    Raises
    ------
    ScoreframeError
        For stacked statements, comments, subqueries, characters outside the expression
        grammar, text that does not parse, over :data:`MAX_WHERE_CHARS` characters or
        over :data:`MAX_OPERATORS` operators.

    See Also
    --------
    apply_where : Filter a LazyFrame by a predicate checked here.

    Examples
    --------
    >>> df = pl.DataFrame({"gender": ["f", "m"], "score": [1.0, 2.0]})
    >>> df.filter(where_expr("gender = 'f' AND score > 0"))["score"].to_list()
    [1.0]
    >>> where_expr("score > 0; COPY trials TO 'x.csv'")
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: the where= / --where predicate must be one expression; ...
    """
    expr, _ = _parse(where, source=source)
    return expr


def _parse(where: str, *, source: str | None) -> tuple[pl.Expr, str | None]:
    """:func:`where_expr`, and the statement word the text starts with (see :func:`_scan`)."""
    if not isinstance(where, str):
        raise ScoreframeError(message("the where= / --where predicate must be a string",
                                      expected="one SQL expression",
                                      got=type(where).__name__, where=source))
    if len(where) > MAX_WHERE_CHARS:
        raise _refuse(f"has {len(where):,} characters, over the limit of "
                      f"{MAX_WHERE_CHARS:,}", where, source=source)
    if not where.strip():
        raise _refuse("is empty", where, source=source)
    first = _scan(where, source=source)
    try:
        expr = pl.sql_expr(where)
    except Exception as exc:  # noqa: BLE001 - polars raises several error types for bad SQL
        raise _not_an_expression(where, first, exc, source=source) from None
    if '{"SubPlan":' in expr.meta.serialize(format="json"):  # the scan lets none through
        raise _refuse("has a subquery", where, source=source)
    return expr, first


def _not_an_expression(where: str, first: str | None, exc: BaseException, *,
                       source: str | None) -> ScoreframeError:
    if first in _STATEMENT_WORDS:
        return _refuse(f"is an SQL statement ({first.upper()}), not an expression", where,
                       source=source)
    return _refuse("is not a valid SQL expression over the columns", where, source=source,
                   hint=_polars_reason(exc) + " " + _HINT)


def _polars_reason(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    reason = " ".join(lines[0].split())
    return "polars: " + (reason if len(reason) <= 200 else reason[:200] + "...") + "."


def apply_where(lf: pl.LazyFrame, where: str | None, *,
                source: str | None = None) -> pl.LazyFrame:
    """Filter ``lf`` lazily by one SQL predicate (none when ``where`` is None or empty).

    The predicate is checked by :func:`where_expr` and against the columns of ``lf``: it must
    name existing columns and give a boolean.

    See Also
    --------
    where_expr : The checks on the text.

    Examples
    --------
    >>> lf = pl.LazyFrame({"gender": ["f", "m"], "score": [1.0, 2.0]})
    >>> apply_where(lf, "gender = 'm'").collect()["score"].to_list()
    [2.0]
    """
    if where is None or where == "":
        return lf
    expr, first = _parse(where, source=source)
    try:
        dtype = lf.select(expr).collect_schema().dtypes()[0]
    except Exception as exc:  # noqa: BLE001 - polars raises several error types for bad SQL
        raise _not_an_expression(where, first, exc, source=source) from None
    if dtype not in (pl.Boolean, pl.Null):
        raise _refuse(f"gives {dtype} values, not true/false", where, source=source)
    return lf.filter(expr)


def check_where(where: str | None, lf: pl.LazyFrame | None = None, *,
                source: str | None = None) -> None:
    """Check a predicate before it is handed on, so that a bad one is reported on ``source``.

    A command that loads a file into a frame and passes the frame and ``where`` to the library
    calls this first: the text is checked as by :func:`where_expr`, and against the columns of
    ``lf`` when given; nothing is read.

    Examples
    --------
    >>> check_where("gender = 'f'", pl.LazyFrame({"gender": ["f"]}), source="`t.csv`")
    >>> check_where("gender = ", source="`t.csv`")
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: the where= / --where predicate for `t.csv` is not ...
    """
    if where is None or where == "":
        return
    if lf is None:
        _parse(where, source=source)
    else:
        apply_where(lf, where, source=source)
