"""Atomic writes that leave nothing behind: temporary names beside the output, then rename.

I/O layer. Every writer in scoreframe builds its output under a hidden temporary name in the
output's directory and renames it into place only when it is complete, so an interrupted write
leaves the destination as it was (absent, or the previous version).

A temporary name says who made it: ``.NAME.scoreframe-tmp-<host>-<pid>-<random>``. A write
killed with ``kill -9`` cannot clean up after itself, so every temporary entry (these, and the
spill directories of the out-of-core engine) is also listed in a registry of temporaries: one
small record per entry, ``<state>/temps/<host>-<pid>-<random>.json`` naming its path, on which
the owning process holds an exclusive ``flock`` for as long as the entry exists. The kernel
drops the lock when the process dies, however it dies, so a record whose lock can be taken
belongs to a process that is gone: :func:`clean_stale` removes such entries, and every command
(and every write) runs it on start. Whatever a crash left behind does not survive the next
run of any command; ``scoreframe clean`` runs it on demand. ``<state>`` is
``$SCOREFRAME_STATE_DIR``, else ``$XDG_STATE_HOME/scoreframe``, else
``~/.local/state/scoreframe``.

Every write also removes the scoreframe temporaries in its output directory whose process (on
this host) is no longer alive, registered or not. Temporaries of earlier versions
(``.NAME.tmp-XXXXXXXX`` holding only ``out``/``old``) are removed once they are 6 hours old.

Replacing an output (``overwrite``) never shows a reader a missing or partial output: a file is
replaced by one ``rename`` of the complete new file; a directory (a partitioned dataset) by
exchanging the complete new directory with the old one in one step (Linux ``renameat2`` with
``RENAME_EXCHANGE``; elsewhere two renames, with a moment where the name is missing). A
reader that opens several files of a dataset could still meet two versions if the exchange
happens between its opens: :func:`consistent_read` runs a read again when the output it read
was replaced meanwhile (the inode and change time of the path differ before and after).

* :func:`atomic_output` -- one file or directory.
* :func:`atomic_outputs` -- several outputs, all or nothing: every target is checked before any
  work starts, all are written to temporaries and renamed together at the end; on failure no
  target is touched and every temporary is removed.
* :func:`check_outputs` -- refuse outputs that exist (without ``overwrite``), that are an input,
  or that sit inside an input dataset directory (inputs are never modified).
* :func:`remove_stale_temps` -- the clean-up of one directory every write runs on start.
* :func:`clean_stale` -- remove every registered temporary of a dead process (any directory).
* :func:`registered_temp` -- register a temporary entry for the life of a ``with`` block.
* :func:`consistent_read` -- run a read again if its input was replaced while it ran.

Setting the environment variable ``SCOREFRAME_TEST_PAUSE_IN_WRITE`` to a number of seconds makes
every write sleep that long after its content is written and before the rename (a hook for the
kill tests; never set it otherwise).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

from scoreframe.errors import ScoreframeError, UsageError, message, quote

__all__ = ["PAUSE_ENV", "STATE_ENV", "TEMP_MARK", "atomic_output", "atomic_outputs",
           "check_outputs", "clean_stale", "consistent_read", "final_path", "host_tag",
           "is_temp_name", "registered_temp", "registry_dir", "remove_stale_temps"]

T = TypeVar("T")

#: Marker inside every temporary name scoreframe creates.
TEMP_MARK = ".scoreframe-tmp-"
#: Environment variable: seconds to sleep before the final rename (kill tests only).
PAUSE_ENV = "SCOREFRAME_TEST_PAUSE_IN_WRITE"
#: Environment variable: the directory of scoreframe's state (the registry of temporaries).
STATE_ENV = "SCOREFRAME_STATE_DIR"
#: Name prefix of the out-of-core engine's spill directories.
SPILL_PREFIX = "scoreframe-spill-"

_TEMP_RE = re.compile(r"^\..*\.scoreframe-tmp-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]+$")


def host_tag() -> str:
    """A short tag of this host, part of every temporary name (shared file systems)."""
    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


def _temp_path(target: Path) -> Path:
    return target.parent / (f".{target.name}{TEMP_MARK}{host_tag()}-{os.getpid()}-"
                            f"{secrets.token_hex(4)}")


def is_temp_name(name: str) -> bool:
    """True for a name scoreframe gives its temporaries.

    Examples
    --------
    >>> is_temp_name(".out.parquet.scoreframe-tmp-0123abcd-4242-9f9f9f9f")
    True
    >>> is_temp_name("out.parquet")
    False
    """
    return _TEMP_RE.match(name) is not None


def final_path(path: str | Path) -> Path:
    """The output a temporary path stands for (messages name the target, not the temporary).

    Examples
    --------
    >>> final_path("/d/.x.h5.scoreframe-tmp-0123abcd-42-9f9f9f9f/new/x.h5").as_posix()
    '/d/x.h5'
    >>> final_path("/d/x.h5").as_posix()
    '/d/x.h5'
    """
    p = Path(path)
    if p.parent.name == "new" and is_temp_name(p.parent.parent.name):
        return p.parent.parent.parent / p.name
    return p


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed but unreaped child is a zombie: it will never finish its write
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def remove_stale_temps(directory: str | Path) -> list[Path]:
    """Remove the scoreframe temporaries in ``directory`` left by dead processes of this host.

    Temporaries of live processes, of other hosts (shared file systems) and every other file
    are left alone. Returns the paths removed.
    """
    d = Path(directory)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(d))
    except OSError:
        return removed
    host = host_tag()
    for entry in entries:
        m = _TEMP_RE.match(entry.name)
        if m and m["host"] == host and not _pid_alive(int(m["pid"])):
            p = Path(entry.path)
            _remove(p)
            removed.append(p)
        elif _is_legacy_temp(entry):
            p = Path(entry.path)
            _remove(p)
            removed.append(p)
    return removed


_LEGACY_RE = re.compile(r"^\..+\.tmp-[a-z0-9_]{8}$")
_LEGACY_AGE = 6 * 3600.0


def _is_legacy_temp(entry: os.DirEntry[str]) -> bool:
    """A temporary of scoreframe versions before these names (``.NAME.tmp-XXXXXXXX``).

    Those carry no process id, so only an old one (untouched for 6 hours) holding nothing
    but the ``out``/``old`` entries those versions wrote is taken for an abandoned write.
    """
    if not _LEGACY_RE.match(entry.name) or not entry.is_dir(follow_symlinks=False):
        return False
    try:
        names = set(os.listdir(entry.path))
        age = time.time() - entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return False
    return bool(names) and names <= {"out", "old"} and age > _LEGACY_AGE


def registry_dir() -> Path:
    """The directory of the registry of temporaries (see the module docstring)."""
    base = os.environ.get(STATE_ENV)
    if base:
        root = Path(base)
    else:
        xdg = os.environ.get("XDG_STATE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".local" / "state") / "scoreframe"
    return root / "temps"


def _owned_name(name: str) -> bool:
    """True for the names of the temporaries scoreframe creates (the only ones it removes)."""
    return is_temp_name(name) or name.startswith(SPILL_PREFIX)


@contextmanager
def registered_temp(path: str | Path) -> Iterator[Path]:
    """Register the temporary entry ``path`` (not yet created) for the life of the block.

    The record is written and locked before the block runs and removed after it; the block
    creates and removes the entry itself. If the process dies inside the block, the next
    :func:`clean_stale` (any command's start) removes the entry. Registration is best effort:
    with no writable state directory the block runs unregistered.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with registered_temp(d / ".x.scoreframe-tmp-0123abcd-1-ab") as rec:
    ...     rec.exists()
    True
    >>> rec.exists()
    False
    """
    reg = registry_dir()
    name = f"{host_tag()}-{os.getpid()}-{secrets.token_hex(6)}"
    record = reg / f"{name}.json"
    fd = -1
    try:
        reg.mkdir(parents=True, exist_ok=True)
        part = reg / f".{name}.part"
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # taken before the record is visible under its name
        os.write(fd, json.dumps({"path": str(Path(path).absolute()), "host": host_tag(),
                                 "pid": os.getpid(), "created": time.time()}).encode())
        os.replace(part, record)
    except OSError:
        if fd >= 0:
            os.close(fd)
            fd = -1
    try:
        yield record
    finally:
        if fd >= 0:
            try:
                record.unlink()
            except OSError:
                pass
            os.close(fd)


def clean_stale(directory: str | Path | None = None) -> list[Path]:
    """Remove every temporary entry left by a process that no longer exists.

    Reads the registry of temporaries (see the module docstring): an entry whose record's lock
    can be taken is left by a dead process and removed with its record. With ``directory``,
    the unregistered temporaries of dead processes in it (and spill directories) go as well.
    Entries of other hosts and of live processes are never touched. Returns what was removed.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> clean_stale(pathlib.Path(tempfile.mkdtemp()))
    []
    """
    removed: list[Path] = []
    reg = registry_dir()
    try:
        records = [e for e in os.scandir(reg) if e.name.endswith(".json")]
    except OSError:
        records = []
    host = host_tag()
    for entry in records:
        if not entry.name.startswith(f"{host}-"):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # the owner is alive (it holds the lock)
            try:
                info = json.loads(os.read(fd, 1 << 16).decode())
                target = Path(info["path"])
            except (ValueError, KeyError, TypeError, OSError, UnicodeDecodeError):
                target = None
            if target is not None and _owned_name(target.name) and (
                    target.exists() or target.is_symlink()):
                _remove(target)
                removed.append(target)
            try:
                os.unlink(entry.path)
            except OSError:
                pass
        finally:
            os.close(fd)
    if directory is not None:
        removed += remove_stale_temps(directory)
    return removed


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux renameat2); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _version(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


@contextmanager
def _pinned(path: Path) -> Iterator[tuple[int, int, int] | None]:
    """The version of ``path`` now, its inode held open for the block.

    Holding the inode open keeps its number from being reused by a later replacement while
    the read runs (a freed inode number comes back quickly, with the same coarse ctime), so
    a version that compares equal after the read is the same file or directory.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield None
        return
    try:
        st = os.fstat(fd)
        yield st.st_dev, st.st_ino, st.st_ctime_ns
    finally:
        os.close(fd)


def consistent_read(path: str | Path, read: Callable[[], T], *, attempts: int = 20) -> T:
    """Run ``read()`` and return its result, again if ``path`` was replaced while it ran.

    A read that fails or that saw the path change (another process replaced the output with
    ``overwrite``) is run again, up to ``attempts`` times (then a ScoreframeError); a failure
    on a path that did not change is raised as it is.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> _ = f.write_text("v1")
    >>> consistent_read(f, f.read_text)
    'v1'
    """
    p = Path(path)
    for attempt in range(attempts):
        with _pinned(p) as before:
            try:
                out = read()
            except Exception:
                after = _version(p)
                replaced = (after != before or after is None) and (
                    before is not None or after is not None)
                if replaced and attempt + 1 < attempts:
                    time.sleep(0.001 * (attempt + 1))
                    continue
                if replaced:  # every attempt overlapped a replacement: say so, not "corrupt"
                    break
                raise
            if _version(p) == before:
                return out
    raise ScoreframeError(message(
        f"replaced while it was read, {attempts} times in a row", path=p,
        hint="Another process keeps replacing it; read it when that process is done."))


def check_outputs(targets: Sequence[str | Path], *, overwrite: bool = False,
                  inputs: Sequence[str | Path] = ()) -> list[Path]:
    """Check output paths before any work starts; return them as paths.

    Outputs go into existing directories: an output whose directory does not exist (or is a
    file) is an error naming that directory, so a mistyped path never creates directories.

    Raises
    ------
    ScoreframeError
        An output exists and ``overwrite`` is false, the same output is named twice, or the
        directory an output goes into does not exist or is not a directory.
    UsageError
        An output is an input, or inside (or contains) an input file or dataset directory.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "ds").mkdir()
    >>> try:
    ...     check_outputs([d / "ds" / "x.png"], inputs=[d / "ds"])
    ... except UsageError as exc:
    ...     print(str(exc).splitlines()[0].endswith("would overwrite or sit inside an input"))
    True
    """
    paths = [Path(t) for t in targets]
    resolved = [p.resolve() for p in paths]
    if len(set(resolved)) != len(resolved):
        raise UsageError(message("the same output is named twice",
                                 got=", ".join(f"`{p}`" for p in paths)))
    ins = [Path(i).resolve() for i in inputs]
    for p, r in zip(paths, resolved, strict=True):
        if any(r == i or i in r.parents or r in i.parents for i in ins):
            raise UsageError(message(
                "the output would overwrite or sit inside an input",
                hint="Inputs are never modified: write the output somewhere else."), path=p)
    for p in paths:
        parent = p.parent
        if not parent.is_dir():
            raise ScoreframeError(message(  # the error is about the directory: its path
                f"the directory of the output {quote(p.name)} "
                + ("is not a directory" if parent.exists() else "does not exist"),
                hint="Outputs go into existing directories: create it first (mkdir -p) or "
                     "name another output path."), path=parent)
        if p.is_symlink() or (p.exists() and not (p.is_file() or p.is_dir())):
            kind = "a symbolic link" if p.is_symlink() else "a device, pipe or socket"
            raise UsageError(message(
                f"the output is {kind}", path=p, expected="a regular file or directory",
                hint="scoreframe replaces outputs atomically (write, then rename), which would "
                     "replace the link or special file itself: name a regular path."))
        if p.exists() and not overwrite:
            raise ScoreframeError(message("the output already exists",
                                          hint="Pass overwrite (CLI: --overwrite) to replace it."),
                                  path=p)
    return paths


def _pause() -> None:
    seconds = os.environ.get(PAUSE_ENV)
    if seconds:
        time.sleep(float(seconds))


class _Slot:
    """One output being written: its temporary directory and the path handed to the writer."""

    def __init__(self, target: Path, directory: bool, stack: ExitStack) -> None:
        self.target = target
        remove_stale_temps(target.parent)
        self.tmp = _temp_path(target)
        stack.enter_context(registered_temp(self.tmp))
        stack.callback(self.discard)
        self.tmp.mkdir()
        (self.tmp / "new").mkdir()
        self.out = self.tmp / "new" / target.name  # same name: writers may look at the suffix
        if directory:
            self.out.mkdir()

    def commit(self) -> None:
        if not (self.out.exists() or self.out.is_symlink()):
            raise ScoreframeError(message(f"nothing was written to `{self.target}`"))
        if self.target.is_dir() and not self.target.is_symlink():
            if _exchange(self.out, self.target):
                return  # the old version is now at self.out, removed with the temporary
            os.replace(self.target, self.tmp / "old")
        os.replace(self.out, self.target)

    def discard(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextmanager
def atomic_outputs(targets: Sequence[str | Path], *, directory: bool | Sequence[bool] = False,
                   overwrite: bool = False,
                   inputs: Sequence[str | Path] = ()) -> Iterator[list[Path]]:
    """Write several outputs all or nothing; yield one temporary path per target.

    Parameters
    ----------
    targets
        Final files or directories.
    directory
        Yield directories instead of file paths (one flag for all, or one per target).
    overwrite
        Replace existing targets; otherwise any existing one is an error raised before any work.
    inputs
        Input paths of the computation: an output equal to, inside or containing one is refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_outputs([d / "a.txt", d / "b.txt"]) as (a, b):
    ...     _ = a.write_text("1"), b.write_text("2")
    >>> sorted(p.name for p in d.iterdir())
    ['a.txt', 'b.txt']
    """
    paths = check_outputs(targets, overwrite=overwrite, inputs=inputs)
    flags = [directory] * len(paths) if isinstance(directory, bool) else list(directory)
    if len(flags) != len(paths):
        raise UsageError(message("one `directory` flag per target", expected=str(len(paths)),
                                 got=str(len(flags))))
    slots: list[_Slot] = []
    clean_stale()
    with ExitStack() as stack:
        for p, flag in zip(paths, flags, strict=True):
            slots.append(_Slot(p, flag, stack))
        yield [s.out for s in slots]
        _pause()
        for s in slots:  # re-check: another process may have created a target meanwhile
            if s.target.exists() and not overwrite:
                raise ScoreframeError(message(f"output `{s.target}` appeared while writing",
                                              hint="Pass overwrite to replace it."))
        for s in slots:
            s.commit()


@contextmanager
def atomic_output(target: str | Path, *, directory: bool = False, overwrite: bool = False,
                  inputs: Sequence[str | Path] = ()) -> Iterator[Path]:
    """Yield a temporary path to write to; on success it replaces ``target`` atomically.

    Parameters
    ----------
    target
        Final file or directory.
    directory
        Yield a directory (for partitioned datasets) instead of a file path.
    overwrite
        Replace an existing ``target``; otherwise an existing one is an error.
    inputs
        Input paths: a ``target`` equal to, inside or containing one is refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_output(d / "x.txt") as tmp:
    ...     _ = tmp.write_text("hello")
    >>> (d / "x.txt").read_text(), [p.name for p in d.iterdir()]
    ('hello', ['x.txt'])
    """
    with atomic_outputs([target], directory=directory, overwrite=overwrite,
                        inputs=inputs) as (out,):
        yield out
