"""A failed command's message keeps the tool's reason and leaves its usage text out."""

from __future__ import annotations

from fslab.errors import CommandFailed

MKFS_XFS_TOO_SMALL = "Filesystem must be larger than 300MB.\nUsage: mkfs.xfs\n" + "".join(
    f"/* option {i} */\t[-o opt{i}=num]\n" for i in range(25))


def test_a_usage_text_after_the_reason_is_left_out() -> None:
    said = str(CommandFailed(["mkfs.xfs", "-q", "/dev/loop7"], 1, MKFS_XFS_TOO_SMALL))
    assert said.splitlines() == ["`mkfs.xfs -q /dev/loop7` exited with status 1",
                                 "  Filesystem must be larger than 300MB.", "  (then its usage text, 26 lines)"]


def test_the_usage_text_ends_at_a_blank_line_and_an_error_after_it_is_kept() -> None:
    argparse_like = "warning: old config\nusage: tool [-h] [-x N]\ntool: error: argument -x: invalid int value: 'a'"
    lines = str(CommandFailed(["tool", "-x", "a"], 2, argparse_like)).splitlines()
    assert lines[1:] == ["  warning: old config", "  tool: error: argument -x: invalid int value: 'a'",
                         "  (then its usage text, 1 line)"]
    # a tool's stdout tail after its stderr (a workload's failure): a blank line ends the usage
    both = "mke2fs: invalid option -- 'Z'\nUsage: mke2fs [-c]\n\t[-b block-size]\n\ndbench: cannot open clients"
    lines = str(CommandFailed(["mke2fs", "-Z"], 1, both)).splitlines()
    assert lines[1:] == ["  mke2fs: invalid option -- 'Z'", "  (then its usage text, 2 lines)",
                         "  dbench: cannot open clients"]


def test_a_long_reason_keeps_its_first_and_last_lines() -> None:
    stderr = "\n".join(f"line {i}" for i in range(20))
    lines = str(CommandFailed(["tool"], 2, stderr)).splitlines()
    assert lines[1:4] == ["  line 0", "  line 1", "  line 2"] and lines[4] == "  ... (12 more lines)"
    assert lines[-1] == "  line 19" and len(lines) == 10


def test_a_usage_line_first_is_the_reason_itself() -> None:
    lines = str(CommandFailed(["tool", "-x"], 2, "usage: tool [-a]\n  -a  all")).splitlines()
    assert lines[1:] == ["  usage: tool [-a]", "    -a  all"]
