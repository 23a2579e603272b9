"""Exception and warning types raised by scoreframe, and the helpers that compose their messages.

Every user-facing error subclasses :class:`ScoreframeError`, itself a ``ValueError``, so callers
may catch either. Messages follow polars' style: lowercase, identifiers in backticks, what was
expected, what was found, where, and a hint after a blank line. An error carries the input
``path``, the 1-based ``line`` (or row) and the ``parameter`` it is about as attributes, apart
from its bare ``text``: ``str(error)`` composes them (``"`x.tsv` line 3: ..."``, see
:func:`located`), and the command line builds its line from the same attributes, never by
reading the message text.

Data never reaches a message unbounded or unescaped: :func:`quote` shows a value (quoted, control
characters escaped, cut with its length noted), :func:`listing` a list of names, and
:func:`message` bounds every part it is given.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike

__all__ = ["AlignmentError", "DegenerateError", "DegenerateGroupWarning", "EngineError",
           "FormatError", "MemoryLimitWarning", "Message", "NotFittedError", "Place",
           "SchemaError", "ScoreframeError", "ScoreframeWarning", "UsageError",
           "ValidationError", "clip", "listing", "located", "message", "printable", "quote",
           "warn_degenerate_groups"]

#: Longest value :func:`quote` shows (characters) before cutting it.
VALUE_LIMIT = 60
#: Longest part (``what``, ``expected``, ``got``, ``where``, ``hint``) :func:`message` keeps.
PART_LIMIT = 320
#: About the longest message :func:`message` composes (characters).
MESSAGE_LIMIT = 600

# Characters that move the cursor, change the terminal or reorder text: the Unicode categories
# Cc (C0, DEL, C1 controls), Cf (format: bidi marks and embeddings, zero-width characters, BOM,
# ...), Zl and Zp (line and paragraph separators) and Cs (lone surrogates, from undecodable
# file names). tests/test_console_safety.py checks the class against `unicodedata`.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else (
        f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def printable(text: str) -> str:
    r"""``text`` with every control, format or separator character shown as an escape.

    ESC, newlines, tabs, C1 controls, bidirectional marks (U+202E, U+200F, ...), zero-width
    characters and lone surrogates become ``\x1b``, ``\n``, ``\t``, ``\u202e``...; everything
    else (letters of any script, emoji, ``[``, ``:``, backslashes) is kept as it is.

    Examples
    --------
    >>> printable("a\x1b[31mb\nc\u202e")
    'a\\x1b[31mb\\nc\\u202e'
    >>> printable("[b]x :x: é")
    '[b]x :x: é'
    """
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, with an ellipsis and its full length.

    Examples
    --------
    >>> clip("abc", 10)
    'abc'
    >>> clip("x" * 1000, 10)
    'xxxxxxxxxx… (1,000 characters)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _middle(text: str, limit: int) -> str:
    """``text`` cut in the middle to about ``limit`` characters: its start and its end kept.

    A message part often ends with what matters (``... is a file``), after a path or a value.

    >>> _middle("a" * 50 + "b" * 50, 30)
    'aaaaaaaaaaaaaaaaaaaa…[70 characters cut]…bbbbbbbbbb'
    """
    if len(text) <= limit:
        return text
    head = 2 * limit // 3
    tail = limit - head
    return f"{text[:head]}…[{len(text) - limit:,} characters cut]…{text[-tail:]}"


def quote(value: object, *, limit: int = VALUE_LIMIT) -> str:
    r"""A value for a message: quoted, control characters escaped, cut at ``limit`` characters.

    Strings (and paths) are quoted as Python does (``'maybe'``); other values are shown with
    ``repr``. A value longer than ``limit`` is cut, with an ellipsis and its full length.

    Examples
    --------
    >>> quote("maybe"), quote(2), quote("a\x1bb")
    ("'maybe'", '2', "'a\\x1bb'")
    >>> quote("L" * 10_000, limit=5)
    "'LLLLL…' (10,000 characters)"
    """
    text = str(value) if isinstance(value, str | PathLike) else repr(value)
    head = text if len(text) <= limit else text[:limit] + "…"
    shown = repr(head) if isinstance(value, str | PathLike) else printable(head)
    return shown if len(text) <= limit else f"{shown} ({len(text):,} characters)"


def listing(items: Iterable[object], *, limit: int = 8, quoted: bool = False) -> str:
    """Names for a message: the first ``limit`` (each cut and escaped), then how many in all.

    Examples
    --------
    >>> listing(["a", "b"])
    'a, b'
    >>> listing([f"s{i}" for i in range(100_000)], limit=3)
    's0, s1, s2, … (100,000 in all)'
    >>> listing(["x", "y"], quoted=True)
    "'x', 'y'"
    """
    seq = list(items)
    shown = [quote(v) if quoted else clip(printable(str(v)), VALUE_LIMIT) for v in seq[:limit]]
    more = f", … ({len(seq):,} in all)" if len(seq) > limit else ""
    return ", ".join(shown) + more


def located(text: str, path: str | PathLike[str] | None = None, line: int | None = None) -> str:
    """``text`` after the place it is about: ``"`path` line N: text"``.

    This is how ``str()`` of a :class:`ScoreframeError` (and of a :class:`Message`) reads: the
    path (escaped, cut in the middle when very long) in backticks, then the 1-based line, then
    the bare text. Without a path or a line, the text is returned as it is.

    Examples
    --------
    >>> located("bad score: expected a number; got 'x'", "scores.txt", 3)
    "`scores.txt` line 3: bad score: expected a number; got 'x'"
    >>> located("empty file", "key.txt"), located("bad field", line=2), located("bad")
    ('`key.txt`: empty file', 'line 2: bad field', 'bad')
    """
    where = [] if path is None else [f"`{_middle(printable(str(path)), PART_LIMIT)}`"]
    if line is not None:
        where.append(f"line {line}")
    return f"{' '.join(where)}: {text}" if where else text


class Message(str):
    """A composed message that keeps its bare text and the place it is about apart.

    The string itself reads as ``str()`` of an error does (:func:`located`); ``text`` is the
    bare message, ``path``, ``line`` and ``parameter`` what it is about. An error built from a
    :class:`Message` takes these attributes (unless given explicitly).

    Examples
    --------
    >>> m = Message("line too long", path="a.tsv", line=4)
    >>> m, m.text, m.path, m.line
    ('`a.tsv` line 4: line too long', 'line too long', 'a.tsv', 4)
    """

    text: str
    path: str | None
    line: int | None
    parameter: str | None

    def __new__(cls, text: str, *, path: str | PathLike[str] | None = None,
                line: int | None = None, parameter: str | None = None) -> Message:
        """Keep ``text`` and the place apart; the string reads as :func:`located` composes."""
        self = super().__new__(cls, located(text, path, line))
        self.text = text
        self.path = None if path is None else str(path)
        self.line = line
        self.parameter = parameter
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[object, ...], dict[str, object]]:
        return (self.text,), {"path": self.path, "line": self.line, "parameter": self.parameter}


class Place(str):
    """Where in an input a message is about: a file, a line, a detail; each kept apart.

    Readers hand a :class:`Place` down as the ``where`` of :func:`message`: the message then
    carries ``path`` and ``line`` as attributes (its text holds only ``detail``, such as
    ``dataset `/scores```). As a string it reads as the place does in ``str()`` of an error.

    Examples
    --------
    >>> at = Place("k.h5")
    >>> at, at.at(3), at.inside("dataset `/scores`")
    ('`k.h5`', '`k.h5` line 3', '`k.h5` dataset `/scores`')
    >>> message("bad scores", where=at.inside("dataset `/scores`")).text
    'bad scores in dataset `/scores`'
    """

    path: str
    line: int | None
    detail: str | None

    def __new__(cls, path: str | PathLike[str], *, line: int | None = None,
                detail: str | None = None) -> Place:
        """Keep the place's parts; the string reads ``"`path` line N detail"``."""
        head = located("", path, line)[:-2]  # "`path` line N", without the ": "
        self = super().__new__(cls, f"{head} {detail}" if detail else head)
        self.path, self.line, self.detail = str(path), line, detail
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[object, ...], dict[str, object]]:
        return (self.path,), {"line": self.line, "detail": self.detail}

    def at(self, line: int) -> Place:
        """The same place at the 1-based ``line`` (or row)."""
        return Place(self.path, line=line, detail=self.detail)

    def inside(self, detail: str) -> Place:
        """The same file, somewhere the message names in words (a dataset, a column)."""
        return Place(self.path, line=self.line, detail=detail)


def message(what: str, *, expected: str | None = None, got: str | None = None,
            where: str | None = None, hint: str | None = None,
            path: str | PathLike[str] | None = None, line: int | None = None,
            parameter: str | None = None) -> Message:
    """Compose an error message in the house format, bounded and escaped whatever the data.

    Control characters are escaped in every part; a part longer than :data:`PART_LIMIT`
    characters is cut in the middle (its start and end kept, the number of characters cut
    noted), and the longest parts are cut further until the message holds at most about
    :data:`MESSAGE_LIMIT` characters. Quote values with :func:`quote` and lists with
    :func:`listing` to cut them where it reads best.

    The file (``path``), 1-based line or row (``line``) and keyword argument (``parameter``)
    the message is about are not written into its text: they are kept on the returned
    :class:`Message` (and so on the error raised with it), which reads as ``"`path` line N:
    text"``. ``where`` is for any other place (``column `c```, ``group a``); a :class:`Place`
    given as ``where`` gives its ``path`` and ``line`` (and only its ``detail`` goes in the text).

    Examples
    --------
    >>> message("column `label` has bad values", expected="bool", got="Int64", where="file a.tsv")
    'column `label` has bad values in file a.tsv: expected bool; got Int64'
    >>> m = message("bad score", expected="a number", got="'x'", path="s.txt", line=3)
    >>> m
    "`s.txt` line 3: bad score: expected a number; got 'x'"
    >>> m.text, m.path, m.line
    ("bad score: expected a number; got 'x'", 's.txt', 3)
    >>> long = "x" * 100_000
    >>> len(message(long, where=long, expected=long, got=long, hint=long)) <= MESSAGE_LIMIT + 60
    True
    """
    if isinstance(where, Place):
        path = where.path if path is None else path
        line = where.line if line is None else line
        where = where.detail
    raw = {k: printable(v) for k, v in (("what", what), ("where", where),
                                        ("expected", expected), ("got", got),
                                        ("hint", hint)) if v}
    limit = dict.fromkeys(raw, PART_LIMIT)
    for _ in range(len(raw)):
        parts = {k: _middle(v, limit[k]) for k, v in raw.items()}
        excess = sum(map(len, parts.values())) + 40 - MESSAGE_LIMIT
        if excess <= 0:
            break
        longest = max(parts, key=lambda k: len(parts[k]))
        limit[longest] = max(len(parts[longest]) - excess - 30, 40)
    parts = {k: _middle(v, limit[k]) for k, v in raw.items()}
    text = parts.get("what", "")
    if "where" in parts:
        text += f" in {parts['where']}"
    found = [f"{k} {parts[k]}" for k in ("expected", "got") if k in parts]
    if found:
        text += ": " + "; ".join(found)
    if "hint" in parts:
        text += f"\n\n{parts['hint']}"
    return Message(text, path=path, line=line, parameter=parameter)


class ScoreframeError(ValueError):
    """Base class of every error scoreframe raises on bad input.

    Parameters
    ----------
    *args
        The message (as for any exception): its bare text, or a :class:`Message` whose
        ``path``, ``line`` and ``parameter`` the error takes when not given here.
    path
        The input or output file the error is about, when there is one. It is not part of
        the bare ``text``; ``str()`` shows it first (:func:`located`).
    line
        The 1-based line (text files) or row (tables) in ``path``, shown after the path.
    parameter
        The keyword argument (``p_target``) the error is about; the command line shows it as
        the option typed (``--p-target``). When it is not given, a message composed by the
        library's convention for a bad argument (``bad `name`...``) sets it, once, here: the
        command line reads only the attribute.

    Examples
    --------
    >>> err = ScoreframeError("bad `p_target`", parameter="p_target")
    >>> err.parameter, err.path, str(err)
    ('p_target', None, 'bad `p_target`')
    >>> ScoreframeError("bad `ci`: expected a number in (0, 1); got 1.5").parameter
    'ci'
    >>> err = FormatError("bad score: got 'x'", path="data/s.txt", line=3)
    >>> str(err), err.text, err.path, err.line
    ("`data/s.txt` line 3: bad score: got 'x'", "bad score: got 'x'", 'data/s.txt', 3)
    >>> err = FormatError(message("empty file", path="k.txt"))
    >>> str(err), err.text, err.path
    ('`k.txt`: empty file', 'empty file', 'k.txt')
    """

    #: The bare message (without the path and line), as given.
    text: str

    def __init__(self, *args: object, path: str | PathLike[str] | None = None,
                 line: int | None = None, parameter: str | None = None) -> None:
        first = args[0] if args else None
        if isinstance(first, Message):
            path = first.path if path is None else path
            line = first.line if line is None else line
            parameter = first.parameter if parameter is None else parameter
            args = (first.text, *args[1:])
        super().__init__(*args)
        self.text = args[0] if len(args) == 1 and isinstance(args[0], str) else (
            super().__str__())
        self.path = None if path is None else str(path)
        self.line = line
        if parameter is None:
            named = _BAD_ARGUMENT.match(self.text)
            parameter = named.group(1) if named else None
        self.parameter = parameter

    def __str__(self) -> str:
        return located(self.text, self.path, self.line)


#: How the library words an error about one keyword argument: ``bad `p_target`: ...``.
_BAD_ARGUMENT = re.compile(r"bad `([A-Za-z_]\w*)`")


class SchemaError(ScoreframeError):
    """A table does not have the canonical columns or types."""


class AlignmentError(ScoreframeError):
    """Scores and a key (or trial list) do not align."""


class DegenerateError(ScoreframeError):
    """A metric is undefined for this input (no targets, no non-targets, ...)."""


class FormatError(ScoreframeError):
    """A file is malformed for the format it is read as."""


class UsageError(ScoreframeError):
    """A command line or function call combines options that do not fit together."""


class NotFittedError(ScoreframeError):
    """A calibrator or fuser was used before :meth:`fit` (or loading)."""


class ValidationError(SchemaError):
    """Trial data failed the data checks (duplicates, unknown labels, null or NaN scores...)."""


class ScoreframeWarning(UserWarning):
    """Base class of every warning scoreframe emits."""


class DegenerateGroupWarning(ScoreframeWarning):
    """A group has no targets or no non-targets (or no spoofs); some of its metrics are null.

    ``group`` is the group's key (``{"gender": "f"}``; empty for all trials), ``metrics`` the
    names of the metrics left null and ``reason`` why (``"no non-targets"``).
    """

    def __init__(self, text: str, *, group: Mapping[str, object] | None = None,
                 metrics: Sequence[str] = (), reason: str = "") -> None:
        super().__init__(text)
        self.group = dict(group or {})
        self.metrics = tuple(metrics)
        self.reason = reason


#: Degenerate groups warned about one by one; the rest are counted in one last warning.
WARN_GROUPS = 20


def warn_degenerate_groups(groups: Sequence[tuple[Mapping[str, object], int, int]],
                           metrics: Sequence[str], *, what: str = "metrics",
                           needs: str = "targets and non-targets", stacklevel: int = 2) -> None:
    """Warn once per degenerate group, naming the metrics left null and why.

    ``groups`` holds ``(key, n_tar, n_non)`` per group without targets or non-targets;
    ``metrics`` names what is null for them (``what``: "metrics", "intervals", ...). The first
    :data:`WARN_GROUPS` groups get one :class:`DegenerateGroupWarning` each; any further ones
    are counted in one last warning, so a run with many empty groups stays readable.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as rec:
    ...     warnings.simplefilter("always")
    ...     warn_degenerate_groups([({"cond": "b"}, 2, 0)], ["eer", "cllr"])
    >>> print(rec[0].message)  # doctest: +NORMALIZE_WHITESPACE
    group cond=b has no non-targets (2 targets, 0 non-targets): eer, cllr are null
    (metrics need targets and non-targets)
    """
    for key, n_tar, n_non in groups[:WARN_GROUPS]:
        name = ", ".join(f"{k}={v}" for k, v in key.items()) or "(all trials)"
        reason = ("no trials" if not (n_tar or n_non) else "no targets" if not n_tar
                  else "no non-targets" if not n_non else f"no {needs.split(' and ')[-1]}")
        text = (f"group {clip(printable(name), 2 * VALUE_LIMIT)} has {reason} ({n_tar} targets, "
                f"{n_non} non-targets): {listing(metrics, limit=12)} "
                f"{'is' if len(metrics) == 1 else 'are'} null ({what} need {needs})")
        warnings.warn(DegenerateGroupWarning(text, group=key, metrics=metrics, reason=reason),
                      stacklevel=stacklevel + 1)
    rest = len(groups) - WARN_GROUPS
    if rest > 0:
        warnings.warn(DegenerateGroupWarning(
            f"{rest:,} more groups (not listed) lack some class: their {what} are null "
            f"({what} need {needs})",
            metrics=metrics, reason=f"no {needs}"), stacklevel=stacklevel + 1)


class EngineError(ScoreframeError):
    """An execution engine cannot run: Dask not installed, scheduler unreachable, no workers."""


class MemoryLimitWarning(ScoreframeWarning):
    """The memory limit is below what an out-of-core evaluation needs whatever its ranges.

    The statistics of one score range cost a fixed amount per result row and replicate
    (groups x bootstrap replicates), however few trials the range holds: with thousands of
    groups and many replicates this alone can pass a small limit. The evaluation goes on, on
    fewer workers and with ranges sized to that fixed part; ``need`` is its estimated peak
    (bytes) and ``limit`` the limit asked for.
    """

    def __init__(self, text: str, *, need: int = 0, limit: int = 0) -> None:
        super().__init__(text)
        self.need = need
        self.limit = limit


class UnresolvedTargetWarning(ScoreframeWarning):
    """An error-rate target is finer than the data can resolve; its value is null.

    FNMR at FMR = 1e-6 needs at least 10^6 impostor comparisons: with fewer, the only FMR
    at or below the target is 0, and the value would be ZeroFMR under another name.
    """
