"""The common question in one line, as hyperfine asks it of commands:
``fslab run --fs ext4,xfs --fio 'rw=randwrite bs=4k fsync=1'``.

It writes the study file it means (TOML, so it can be edited and run again with
``fslab run FILE``): the file systems named, one fio workload of the options given on the
study's default image device, ``repetitions = "auto"`` (repeat until the comparison is
answered). The file is checked by the same reading as any study file before it is
written, so an error names the option (``--fio rw: 'randwirte' is not an fio pattern``)."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

from .errors import SpecError

# What the one-line study adds unless the options say otherwise: a few seconds of fio per
# run over a file small enough to lay out in a second, on a 2 GiB sparse image.
FIO_DEFAULTS: dict[str, str | int] = {"size": "256M", "runtime": 5, "time_based": 1}
DEVICE_SIZE = "2GiB"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def fio_options(text: str) -> dict[str, str | int]:
    """'rw=randwrite bs=4k fsync=1' -> {'rw': 'randwrite', 'bs': '4k', 'fsync': 1}: fio's
    own NAME=VALUE words (quoted as a shell would); a bare NAME is a flag (NAME = 1).
    Raises SpecError naming the word it cannot read."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise SpecError(f"--fio {text!r}: {exc}") from None
    if not words:
        raise SpecError("--fio: give fio options as NAME=VALUE words, e.g. --fio 'rw=randwrite bs=4k fsync=1'")
    out: dict[str, str | int] = {}
    for word in words:
        name, eq, value = word.partition("=")
        name = name.strip().removeprefix("--")
        if not _NAME.match(name):
            raise SpecError(f"--fio: {word!r} is not a fio option (NAME=VALUE, e.g. bs=4k)")
        if name in ("name", "kind", "filename", "directory"):
            raise SpecError(f"--fio: {name} is set by fslab (each run's file lives on the file system under "
                            "test); leave it out, or write a study file")
        if name in out:
            raise SpecError(f"--fio: {name} is given twice ({out[name]!r} and {value!r})")
        out[name] = int(value) if eq and value.isdigit() else value if eq else 1
    return out


def _toml_value(value: str | int | list[str]) -> str:
    # JSON's strings and lists are TOML's basic strings and arrays.
    return json.dumps(value)


def study_text(filesystems: list[str], options: dict[str, str | int]) -> str:
    """The study file of the one-line study, with a comment saying how it was made."""
    fio = {**FIO_DEFAULTS, **options}
    words = " ".join(f"{k}={v}" for k, v in options.items())
    lines = [
        f"# Written by: fslab run --fs {','.join(filesystems)} --fio {shlex.quote(words)}",
        "# Edit it and run it again with `fslab run THIS_FILE`.",
        "[study]",
        f"name = {_toml_value(' vs '.join(filesystems) + ': ' + words)}",
        'repetitions = "auto"   # repeat each cell until the comparison is answered',
        'order = "shuffled"',
        'fresh = "run"          # a new file system for every run',
        "",
        "[device]",
        'kind = "image"         # a sparse image on a loop device, made and removed by fslab',
        f"size = {_toml_value(DEVICE_SIZE)}",
        "",
        *[f"[filesystems.{_toml_key(fs)}]" for fs in filesystems],
        "",
        "[[workloads]]",
        'kind = "fio"',
        'name = "fio"',
        *[f"{k} = {_toml_value(v)}" for k, v in fio.items()],
        "",
    ]
    return "\n".join(lines)


def _toml_key(name: str) -> str:
    return name if re.match(r"^[A-Za-z0-9_-]+$", name) else json.dumps(name)


def filesystem_names(text: str) -> list[str]:
    """'ext4,xfs' -> ['ext4', 'xfs']; each a file system fslab knows, at least two."""
    from .filesystems import FILESYSTEMS

    names = [n.strip() for n in text.split(",") if n.strip()]
    known = FILESYSTEMS.names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SpecError(f"--fs: {', '.join(unknown)}: not a file system fslab knows; known: {', '.join(known)}")
    if len(set(names)) < 2:
        raise SpecError(f"--fs {text}: name at least two file systems to compare, e.g. --fs ext4,xfs")
    if len(set(names)) != len(names):
        raise SpecError(f"--fs {text}: a file system is named twice")
    return names


def write_study(filesystems: str, fio: str, out: Path | None, results: Path, *, allow_exec: bool = False) -> Path:
    """Check and write the one-line study's file: to ``out``, or to the results directory as
    ``fslab-run-<file systems>-<options>.toml``. Raises SpecError (naming the option) before
    anything is written."""
    from .study import parse_spec

    names = filesystem_names(filesystems)
    options = fio_options(fio)
    text = study_text(names, options)
    source = f"--fio {fio!r}"
    try:
        parse_spec(tomllib.loads(text), source, allow_exec=allow_exec)
    except SpecError as exc:  # the file's field path is the option the user typed
        raise SpecError(str(exc).replace("workloads[0].", "").replace(f"{source}: ", f"{source}: option ")) from None
    if out is None:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{'-'.join(names)}-{'-'.join(f'{k}{v}' for k, v in options.items())}")
        out = results / f"fslab-run-{slug.strip('-')[:80]}.toml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out
