"""``cached_property`` without the class-wide lock of Python 3.11.

Imports nothing from the package, so every layer (kernels included) may use it.

Python 3.8-3.11's :class:`functools.cached_property` takes one lock per *attribute of the
class*, shared by all instances: while one thread computes ``SortedScores.blocks`` of one
group, another thread computing the blocks of another group waits, and the in-memory engine's
one-group-per-thread reduction runs its PAV passes one at a time. Python 3.12 removed the
lock. This is the 3.12 behaviour on every version: the value is computed
on first access and stored in the instance's ``__dict__``; two threads racing on the *same*
instance may both compute it (the values are equal, the last one stays), which the package's
cached values allow, being pure functions of the instance.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar, overload

__all__ = ["cached_property"]

_T = TypeVar("_T")
_MISSING = object()


class cached_property(functools.cached_property[_T]):  # noqa: N801 - the stdlib's name
    """A :class:`functools.cached_property` that never locks (see the module docstring).

    Examples
    --------
    >>> class A:
    ...     calls = 0
    ...     @cached_property
    ...     def x(self) -> int:
    ...         A.calls += 1
    ...         return 42
    >>> a = A()
    >>> a.x, a.x, A.calls
    (42, 42, 1)
    >>> del a.x  # cleared like the stdlib's
    >>> a.x, A.calls
    (42, 2)
    """

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> cached_property[_T]:
        ...

    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _T:
        ...

    def __get__(self, instance: object | None,
                owner: type[Any] | None = None) -> cached_property[_T] | _T:
        if instance is None:
            return self
        name = self.attrname
        if name is None:  # pragma: no cover - only outside a class body, as in the stdlib
            raise TypeError("cached_property used without __set_name__")
        cache = instance.__dict__
        value = cache.get(name, _MISSING)
        if value is _MISSING:
            value = self.func(instance)
            cache[name] = value
        return value  # type: ignore[no-any-return]  # the func's _T, stored untyped in __dict__
