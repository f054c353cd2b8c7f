"""The base of every study-file section: each key declared, and a TOML value taken as the
type it was written in. pydantic's lax mode would read ``seed = true`` as seed 1,
``level = false`` as RAID level 0 and ``trace = "yes"`` as a switch; a study file says a
number as a number and a switch as ``true`` or ``false``."""

from __future__ import annotations

import functools
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationInfo, field_validator


def _toml_bool(value: Any) -> Any:
    # pydantic alone would take "yes", "off" or 0 as a boolean.
    if not isinstance(value, bool):
        raise ValueError("must be true or false (a TOML boolean, without quotes)")
    return value


# A switch of a study file: true or false, nothing else.
TomlBool = Annotated[bool, BeforeValidator(_toml_bool)]


def _scalar_types(annotation: Any) -> set[Any]:
    """The scalar types a field's annotation accepts at its top level (a Literal's values
    count as their types; containers and models are left as they are)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _scalar_types(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return set().union(*(_scalar_types(arg) for arg in get_args(annotation)))
    if origin is Literal:
        return {type(value) for value in get_args(annotation)}
    return {annotation}


class TomlSection(BaseModel):
    """A section whose every field is declared (a misspelt key is an error; a section that
    hands its other keys to a plug-in says ``extra="allow"``) and whose numbers are not
    booleans."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name is not None and _wants_a_number(cls, info.field_name):
            raise ValueError("must be a number, not a TOML boolean")
        return value


@functools.cache
def _wants_a_number(section: type[TomlSection], field: str) -> bool:
    accepted = _scalar_types(section.model_fields[field].annotation)
    return bool(accepted & {int, float}) and not accepted & {bool, Any}
