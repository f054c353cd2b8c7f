"""Every numeric argument of every command is bounded: a value out of range is refused by
the command line with a message naming the option, never passed on to fail later (or to
be read as something else: `simulate --qd 0` used to print "open loop" and compute a
closed loop at depth 1)."""

from __future__ import annotations

import typing

import click
import pytest
import typer
from typer.testing import CliRunner

from fslab.cli import app


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    out = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():  # a group's subcommands
        out += _commands(sub, (*path, name))
    return out


def _numeric(param: click.Parameter) -> bool:
    """Whether a parameter takes an int or a float (Optional[...] and lists included)."""
    annotation = param.type_descriptor.annotation if hasattr(param, "type_descriptor") else None
    if annotation is None:  # a plain click parameter
        return getattr(param, "type", None) in (click.INT, click.FLOAT)
    return bool({int, float} & {annotation, *typing.get_args(annotation)})


def test_every_numeric_option_of_every_command_has_a_lower_bound() -> None:
    unbounded, numeric = [], 0
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            if _numeric(param):
                numeric += 1
                if getattr(param, "min", None) is None:
                    unbounded.append(f"fslab {' '.join(path)} {param.name}: no minimum")
    assert numeric >= 6  # --study (report, export, compare, ...), --qd, --days, --buffer-kb, ...
    assert not unbounded, unbounded


@pytest.mark.parametrize("argv,option", [
    (["simulate", "--synthetic", "rw=randread,bs=4k,count=10", "--qd", "0"], "--qd"),
    (["simulate", "--synthetic", "rw=randread,bs=4k,count=10", "--qd", "-3"], "--qd"),
    (["report", "--study", "0"], "--study"),
    (["compare", "a", "b", "--study", "-1"], "--study"),
    (["lab", "init", "/nonexistent/lab", "--days", "0"], "--days"),
    (["trace", "analyze", "x.parquet", "--workload-bytes", "0"], "--workload-bytes"),
])
def test_an_out_of_range_number_is_refused_naming_the_option(argv: list[str], option: str) -> None:
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "250"})
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output and "greater than or equal to" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
