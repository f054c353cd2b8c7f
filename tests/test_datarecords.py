"""fslab.datarecords against the standard data classes it stands in for on the job path:
the same class declared both ways must behave the same where fslab relies on it."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import typing
from typing import Any

import pytest

from fslab.datarecords import FrozenRecordError, asdict, datarecord, field, fields, is_datarecord, replace


@datarecord(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    note: str = field(default="", repr=False, compare=False)


@dataclasses.dataclass(frozen=True)
class StdPoint:
    x: int
    y: int = 0
    tags: dict[str, str] = dataclasses.field(default_factory=dict)
    note: str = dataclasses.field(default="", repr=False, compare=False)


@datarecord(frozen=True)
class Pair:
    a: int
    b: str = field(default="", compare=False)


@dataclasses.dataclass(frozen=True)
class StdPair:
    a: int
    b: str = dataclasses.field(default="", compare=False)


@datarecord
class Counter:
    name: str
    seen: list[int] = field(default_factory=list)
    doubled: int = 0

    def __post_init__(self) -> None:
        self.doubled = 2 * len(self.seen)


@dataclasses.dataclass
class StdBox:
    label: str
    point: Point


@datarecord(frozen=True)
class Labelled(Point):
    label: str = "a"


def test_construction_repr_and_equality_match_a_data_class_declared_alike() -> None:
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((), {"x": 3, "tags": {"k": "v"}}), ((1,), {"note": "n"})]:
        ours, std = Point(*args, **kwargs), StdPoint(*args, **kwargs)
        assert repr(ours).replace("Point", "StdPoint", 1) == repr(std)
        assert (ours.x, ours.y, ours.tags, ours.note) == (std.x, std.y, std.tags, std.note)
    assert Point(1, 2) == Point(1, 2, note="differs: not compared")
    assert Point(1, 2) != Point(1, 3)
    assert Point(1) != StdPoint(1)  # another class is never equal, as with data classes
    assert hash(Pair(1, "a")) == hash(Pair(1, "b")) == hash(StdPair(1, "c"))  # the compared fields only
    assert hash(Pair(1, "a")) != hash(Pair(2, "a"))
    with pytest.raises(TypeError, match="unhashable"):
        hash(Point(1))  # a frozen record hashes its fields, and a dict among them cannot be


def test_each_instance_gets_its_own_default_from_the_factory() -> None:
    a, b = Point(1), Point(2)
    assert a.tags == {} and a.tags is not b.tags


def test_a_frozen_record_refuses_assignment_and_deletion_as_a_frozen_data_class_does() -> None:
    p = Point(1)
    with pytest.raises(FrozenRecordError, match="cannot assign to field 'x'"):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError, match="cannot delete field 'y'"):
        del p.y  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        StdPoint(1).x = 2  # type: ignore[misc]
    assert p.x == 1


def test_wrong_arguments_are_the_errors_a_data_class_gives() -> None:
    with pytest.raises(TypeError, match="missing required argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes 4 positional arguments but 5 were given"):
        Point(1, 2, {}, "", 5)  # type: ignore[call-arg]


def test_a_mutable_default_or_a_required_field_after_a_default_is_refused_at_declaration() -> None:
    with pytest.raises(ValueError, match="mutable default"):
        @datarecord
        class Shared:
            items: list[int] = []  # noqa: RUF012 (the mistake under test)
    with pytest.raises(ValueError, match="mutable default .bytearray."):
        @datarecord
        class Buffer:
            data: bytearray = bytearray()  # unhashable, so refused as dataclasses refuses it
    with pytest.raises(TypeError, match="no ClassVar"):
        @datarecord
        class Counted:
            total: typing.ClassVar[int] = 0
    with pytest.raises(TypeError, match="'b' without a default follows 'a'"):
        @datarecord
        class Order:
            a: int = 1
            b: int  # type: ignore[misc]


def test_post_init_runs_after_init_and_again_after_replace() -> None:
    c = Counter("c", [1, 2, 3])
    assert c.doubled == 6
    c.seen = [1]  # not frozen: assignment works
    assert replace(c, name="d").doubled == 2
    assert Counter.__hash__ is None  # an unfrozen record with eq is unhashable, as a data class is


def test_replace_keeps_the_other_fields_and_refuses_an_unknown_one() -> None:
    p = Point(1, 2, {"k": "v"}, note="n")
    q = replace(p, y=5)
    assert (q.x, q.y, q.tags, q.note) == (1, 5, {"k": "v"}, "n") and type(q) is Point
    with pytest.raises(TypeError, match="Point has no field 'z'"):
        replace(p, z=1)
    assert replace(StdPoint(1), y=3) == StdPoint(1, 3)  # a standard data class goes to dataclasses
    with pytest.raises(TypeError, match="not dict"):
        replace({"x": 1}, x=2)


def test_asdict_recurses_through_records_data_classes_and_containers_and_copies_the_rest() -> None:
    inner = Point(1, 2, {"k": "v"})
    box = StdBox("b", inner)
    out: dict[str, Any] = asdict(box)
    assert out == {"label": "b", "point": {"x": 1, "y": 2, "tags": {"k": "v"}, "note": ""}}
    assert out["point"]["tags"] is not inner.tags  # a copy, not the record's own dict
    nested = asdict(Counter("c", [1]))
    assert nested == {"name": "c", "seen": [1], "doubled": 2}
    assert asdict(Point(1)) == dataclasses.asdict(StdPoint(1))
    with pytest.raises(TypeError, match="not the class Point"):
        asdict(Point)  # the class, not an instance


def test_a_subclass_adds_its_fields_after_its_base_and_an_undecorated_one_keeps_them() -> None:
    assert [f.name for f in fields(Labelled)] == ["x", "y", "tags", "note", "label"]
    assert Labelled(1, label="b") == Labelled(1, label="b") != Labelled(1)

    class Plain(Point):  # no decorator: the base's methods, its class in repr and ==
        pass

    assert repr(Plain(1)).endswith(".<locals>.Plain(x=1, y=0, tags={})")
    assert Plain(1) != Point(1)
    with pytest.raises(FrozenRecordError):
        Plain(1).x = 3  # type: ignore[misc]
    assert is_datarecord(Plain) and is_datarecord(Plain(1)) and not is_datarecord(StdPoint(1))


def test_a_method_the_class_defines_itself_is_kept() -> None:
    @datarecord(frozen=True)
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("n")) == "<n>"
    assert Named("n") == Named("n")


def test_a_record_that_holds_itself_shows_an_ellipsis_there() -> None:
    c = Counter("c")
    c.seen = [c]  # type: ignore[list-item]
    assert repr(c) == "Counter(name='c', seen=[...], doubled=0)"


def test_records_pickle_and_copy_as_values() -> None:
    p = Labelled(1, 2, {"k": "v"}, note="n", label="z")
    for again in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert again == p and again.note == "n" and type(again) is Labelled
    assert pickle.loads(pickle.dumps(Counter("c", [1]))).doubled == 2
