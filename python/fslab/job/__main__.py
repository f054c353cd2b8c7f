"""``python -m fslab.job run JOB --out OUT [--work WORK]`` (and ``age``): the job entry a
QEMU guest starts, without the CLI's libraries; ``serve DIR`` runs several jobs on one
import (fslab.job.serve).

`fslab job run` does the same through the CLI; this entry exists because a guest under
TCG pays for every module it imports (the CLI's typer, click and rich cost a few seconds
there and nothing of them is used by a job). Exit statuses are the CLI's: 0 done (runs may
have failed: their records say so), 2 an fslab error (its message on stderr, and in the
job folder's error.json), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..jobdata.record import RunRecord
from ..jobdata.terms import STATUS_OK
from .folder import JobFolder


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fslab.job",
                                     description="Execute one job (a file system instance and its runs).")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, what in (("run", "run the job's runs: OUT/records.jsonl and OUT/runs/<run>/"),
                       ("age", "make and age the job's file system, then leave it unmounted")):
        command = commands.add_parser(name, help=what)
        command.add_argument("job_file", type=Path, help="a job file (from `fslab plan STUDY --jobs DIR`)")
        command.add_argument("--out", type=Path, required=True, help="where the job's results go")
        command.add_argument("--work", type=Path, help="images and mount points (default: OUT/work)")
    serve = commands.add_parser("serve", help="run the jobs requested in DIR, each in a child of one import")
    serve.add_argument("dir", type=Path, help="the folder of requests (fslab.job.serve)")
    return parser


def main(argv: list[str]) -> int:
    from ..errors import FslabError
    from ..signals import install_handlers
    from .entry import age_job, load_job, run_job

    args = _parser().parse_args(argv)
    if args.command == "serve":
        from .serve import serve

        return serve(args.dir, main)
    folder = JobFolder(args.out.resolve())  # absolute: tools run in the runs' folders
    work = (args.work or args.out / "work").resolve()
    try:
        job = load_job(args.job_file)
        install_handlers()
        if args.command == "age":
            report = age_job(job, folder, work)
            print(f"aged to {report.utilisation_reached:.1%} utilisation in {report.wall_s:.1f} s",
                  file=sys.stderr)
            return 0
        counts = {"ok": 0, "failed": 0}

        def on_record(record: RunRecord) -> None:
            counts["ok" if record.status == STATUS_OK else "failed"] += 1

        run_job(job, folder, work, on_record)
        # units.counted's plural, without its import on the job path
        print(f"job {job.id}: {counts['ok']} run{'' if counts['ok'] == 1 else 's'} ok, {counts['failed']} failed; "
              f"records in {folder.records_file}", file=sys.stderr)
        return 0
    except FslabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
