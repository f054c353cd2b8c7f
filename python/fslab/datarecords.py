"""Data classes for the job path that import and build without the ``dataclasses`` module.

A job in the QEMU guest runs under TCG, where Python is some 20x slower than on the host,
and the guest's job server imports the job entry once per boot before its first job.
``dataclasses`` costs that import about a second there (docs/performance.md): it imports
``inspect`` (and with it ``ast``, ``dis`` and ``tokenize``), and it compiles every class's
``__init__``, ``__eq__``, ``__repr__``, ``__hash__`` and frozen ``__setattr__`` from
generated source. ``datarecord`` gives a class the same methods as closures over its field
list, so nothing is compiled and nothing more is imported.

It keeps what fslab's classes use of dataclasses, with the same behaviour: fields from the
class's annotations in order (a base record's first), positional or keyword ``__init__``,
``field(default=..., default_factory=..., repr=..., compare=...)``, ``__post_init__``,
``frozen`` (assignment raises ``FrozenRecordError``, an ``AttributeError``), ``eq`` and, for
a frozen class, ``__hash__`` over the compared fields; a method the class defines itself
is left alone. ``replace``, ``asdict`` and ``fields`` here take records and standard data
classes alike. Not kept: ``ClassVar``, ``InitVar``, ``kw_only``, ``slots``, ``order`` and
positional ``match`` patterns; a class that needs one stays a standard data class (only
the job path's classes are records).
"""

from __future__ import annotations

from collections.abc import Callable
from reprlib import recursive_repr  # loaded already: collections imports it
from typing import Any, TypeVar, cast, dataclass_transform, overload

T = TypeVar("T")

FIELDS_ATTR = "__datarecord_fields__"


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenRecordError(AttributeError):
    """An assignment to a field of a frozen record (dataclasses' FrozenInstanceError)."""


class Field:
    """One field of a record: its name, default or default factory, and whether it shows
    in ``repr`` and takes part in ``==`` and ``hash``."""

    __slots__ = ("name", "default", "default_factory", "repr", "compare")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING,
                 repr: bool = True, compare: bool = True) -> None:  # noqa: A002 (dataclasses' name)
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("a field cannot have both a default and a default_factory")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


@overload
def field(*, default: T, repr: bool = ..., compare: bool = ...) -> T: ...
@overload
def field(*, default_factory: Callable[[], T], repr: bool = ..., compare: bool = ...) -> T: ...
@overload
def field(*, repr: bool = ..., compare: bool = ...) -> Any: ...
def field(*, default: Any = MISSING, default_factory: Any = MISSING,
          repr: bool = True, compare: bool = True) -> Any:  # noqa: A002 (dataclasses' name)
    """A field's options, as ``dataclasses.field`` takes them."""
    return Field(default, default_factory, repr, compare)


def _own_fields(cls: type) -> list[Field]:
    out = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if text.split("[")[0].rsplit(".", 1)[-1] in ("ClassVar", "InitVar"):
            raise TypeError(f"{cls.__qualname__}.{name}: a datarecord has no ClassVar or InitVar fields; "
                            f"make {cls.__qualname__} a standard data class")
        value = cls.__dict__.get(name, MISSING)
        spec = value if isinstance(value, Field) else Field(default=value)
        if spec.default is not MISSING and type(spec.default).__hash__ is None:  # dataclasses' test
            raise ValueError(f"{cls.__qualname__}.{name}: a mutable default ({type(spec.default).__name__}) "
                             f"would be shared by every instance; use field(default_factory=...)")
        spec.name = name
        # The class attribute is the default, as in a data class; a factory leaves none.
        if spec.default is MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, spec.default)
        out.append(spec)
    return out


def _all_fields(cls: type) -> tuple[Field, ...]:
    by_name: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for spec in base.__dict__.get(FIELDS_ATTR, ()):
            by_name[spec.name] = spec
    for spec in _own_fields(cls):
        by_name[spec.name] = spec  # a field declared again keeps its base's place, as in a data class
    specs = tuple(by_name.values())
    seen_default = None
    for spec in specs:
        if spec.default is not MISSING or spec.default_factory is not MISSING:
            seen_default = spec.name
        elif seen_default is not None:
            raise TypeError(f"{cls.__qualname__}: field {spec.name!r} without a default follows "
                            f"{seen_default!r}, which has one")
    return specs


def _make_init(cls: type, specs: tuple[Field, ...]) -> Callable[..., None]:
    names = tuple(s.name for s in specs)
    known = frozenset(names)
    title = cls.__qualname__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{title}() takes {len(names)} positional arguments but {len(args)} were given")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in known:
                raise TypeError(f"{title}() got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"{title}() got multiple values for argument {key!r}")
            values[key] = value
        own = self.__dict__  # written directly, as a frozen data class's __init__ does through object
        for spec in specs:
            if spec.name in values:
                own[spec.name] = values[spec.name]
            elif spec.default is not MISSING:
                own[spec.name] = spec.default
            elif spec.default_factory is not MISSING:
                own[spec.name] = spec.default_factory()
            else:
                raise TypeError(f"{title}() missing required argument: {spec.name!r}")
        post_init = getattr(self, "__post_init__", None)
        if post_init is not None:
            post_init()

    return __init__


def _make_repr(specs: tuple[Field, ...]) -> Callable[[Any], str]:
    names = tuple(s.name for s in specs if s.repr)

    @recursive_repr()  # a record that holds itself shows "..." there, as a data class does
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    return __repr__


def _make_eq(specs: tuple[Field, ...]) -> Callable[[Any, object], Any]:
    names = tuple(s.name for s in specs if s.compare)

    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    return __eq__


def _make_hash(specs: tuple[Field, ...]) -> Callable[[Any], int]:
    names = tuple(s.name for s in specs if s.compare)

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in names))

    return __hash__


def _make_frozen(cls: type, specs: tuple[Field, ...]) -> tuple[Callable[..., None], Callable[..., None]]:
    names = frozenset(s.name for s in specs)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenRecordError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenRecordError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    return __setattr__, __delattr__


def _set_new(cls: type, name: str, method: Any) -> None:
    """A method the class body defines itself stays, as in a data class."""
    if name not in cls.__dict__:
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)


def _process(cls: type, frozen: bool, eq: bool) -> type:
    specs = _all_fields(cls)
    setattr(cls, FIELDS_ATTR, specs)
    _set_new(cls, "__init__", _make_init(cls, specs))
    _set_new(cls, "__repr__", _make_repr(specs))
    own_hash = cls.__dict__.get("__hash__", MISSING)
    # Defining __eq__ in a class body sets its __hash__ to None: that is not a hash of its own.
    explicit_hash = own_hash is not MISSING and not (own_hash is None and "__eq__" in cls.__dict__)
    if eq:
        _set_new(cls, "__eq__", _make_eq(specs))
        if not explicit_hash:
            cls.__hash__ = _make_hash(specs) if frozen else None  # type: ignore[assignment,method-assign]
    if frozen:
        setter, deleter = _make_frozen(cls, specs)
        for name, method in (("__setattr__", setter), ("__delattr__", deleter)):
            if name in cls.__dict__:
                raise TypeError(f"{cls.__qualname__}: a frozen datarecord cannot define {name}")
            _set_new(cls, name, method)
    return cls


@overload
def datarecord(cls: type[T], /) -> type[T]: ...
@overload
def datarecord(*, frozen: bool = ..., eq: bool = ...) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(field_specifiers=(field,))
def datarecord(cls: type[T] | None = None, /, *, frozen: bool = False,
               eq: bool = True) -> type[T] | Callable[[type[T]], type[T]]:
    """Make ``cls`` a record: ``@datarecord`` or ``@datarecord(frozen=True)``, as ``@dataclass``."""
    def wrap(target: type[T]) -> type[T]:
        return _process(target, frozen, eq)

    return wrap if cls is None else wrap(cls)


def is_datarecord(obj: Any) -> bool:
    """Whether ``obj`` is a record class or an instance of one."""
    return hasattr(obj if isinstance(obj, type) else type(obj), FIELDS_ATTR)


def _is_dataclass_instance(obj: Any) -> bool:
    return not isinstance(obj, type) and hasattr(type(obj), "__dataclass_fields__")


def _has_fields(obj: Any) -> bool:
    """Whether ``obj`` is an instance (not a class) of a record or a standard data class."""
    return _is_dataclass_instance(obj) or (not isinstance(obj, type) and is_datarecord(obj))


def fields(class_or_instance: Any) -> tuple[Any, ...]:
    """The fields of a record or a standard data class (class or instance), in order."""
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    specs: tuple[Field, ...] | None = getattr(cls, FIELDS_ATTR, None)
    if specs is not None:
        return specs
    if hasattr(cls, "__dataclass_fields__"):
        import dataclasses  # already loaded: the class is one of its

        return dataclasses.fields(cls)
    raise TypeError(f"fields() takes a datarecord or a dataclass, not {cls.__qualname__}")


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of ``obj`` (a record or a standard data class) with ``changes`` to its fields,
    made through its ``__init__`` (so ``__post_init__`` runs again), as ``dataclasses.replace``."""
    specs = getattr(type(obj), FIELDS_ATTR, None)
    if specs is None:
        if _is_dataclass_instance(obj):
            import dataclasses

            return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
        raise TypeError(f"replace() takes a datarecord or dataclass instance, not {type(obj).__qualname__}")
    unknown = set(changes) - {s.name for s in specs}
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values = {s.name: getattr(obj, s.name) for s in specs}
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: Any) -> dict[str, Any]:
    """A record or a standard data class as a dict, recursing through records, data classes,
    lists, tuples and dicts and copying the rest, as ``dataclasses.asdict`` does."""
    if _has_fields(obj):
        import copy  # here, not at the top: the job path's import never needs it

        return cast(dict[str, Any], _as_plain(obj, copy.deepcopy))
    given = f"the class {obj.__qualname__}" if isinstance(obj, type) else type(obj).__qualname__
    raise TypeError(f"asdict() takes an instance of a datarecord or dataclass, not {given}")


def _as_plain(obj: Any, deepcopy: Callable[[Any], Any]) -> Any:
    if _has_fields(obj):
        return {f.name: _as_plain(getattr(obj, f.name), deepcopy) for f in fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple keeps its type
        return type(obj)(*[_as_plain(v, deepcopy) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_as_plain(v, deepcopy) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((_as_plain(k, deepcopy), _as_plain(v, deepcopy)) for k, v in obj.items())
    return deepcopy(obj)
