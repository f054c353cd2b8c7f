"""The `fslab` command as a user runs it: exit codes, messages, machine-readable output."""

import json
import os
import subprocess
import sys

FSLAB = [sys.executable, "-m", "fslab.cli"]


def fslab(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*FSLAB, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_plan_json_of_seed_002():
    done = fslab("plan", "seed-002", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert len(plan["runs"]) == 3 * len(plan["cells"]) and plan["not_compared"] is None
    # all four where jfs runs (the guest), or all four skipped, saying why
    assert (len(plan["cells"]) == 200 and {c["backend"] for c in plan["cells"]} == {"guest"}) or (
        {s["filesystem"] for s in plan["skipped"]} == {"ext3", "ext4", "xfs", "jfs"})


def test_invalid_study_exits_2_with_field(tmp_path):
    study = tmp_path / "bad.toml"
    study.write_text('[study]\nname = "x"\n[filesystems.ext4]\n[[workloads]]\nkind = "fio"\n'
                     'name = "w"\nsize = "1G"\nbs = "4q"\n')
    done = fslab("plan", str(study))
    assert done.returncode == 2
    assert "bad.toml" in done.stderr and "workloads[0].bs" in done.stderr
    assert "Traceback" not in done.stderr


def test_doctor_lists_checks_with_fixes():
    done = fslab("doctor")
    assert done.returncode == 0
    assert "fio" in done.stdout and "kernel: xfs" in done.stdout and "checks pass" in done.stdout


def test_list_presets():
    done = fslab("list", "--presets")
    names = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert {"quickstart", "seed-000", "seed-001", "seed-002", "seed-004"} <= set(names)


def test_run_report_export_and_errors(device_support, tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(f"""
[study]
name = "cli"
repetitions = 2
[device]
size = "512MiB"
image_dir = "{tmp_path / 'images'}"
[filesystems.ext4]
[[workloads]]
kind = "fio"
name = "randread"
rw = "randread"
bs = "4k"
size = "16M"
direct = 1
runtime = 1
time_based = 1
""")
    done = fslab("run", str(study), "-r", "res", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "randread" in done.stdout and "(n=2)" in done.stdout and "IOPS" in done.stdout
    exported = fslab("export", "-r", "res", "--format", "json", cwd=tmp_path)
    records = json.loads(exported.stdout)
    assert len(records) == 2 and all(r["metrics"]["read_iops"]["unit"] == "IOPS" for r in records)
    bad = fslab("report", "-r", "res", "--metric", "nope", cwd=tmp_path)
    assert bad.returncode == 2 and "stored metrics:" in bad.stderr and "read_iops" in bad.stderr
    bad = fslab("export", "-r", "res", "--format", "xml", cwd=tmp_path)
    assert bad.returncode == 2 and "csv" in bad.stderr and "json" in bad.stderr
    listed = fslab("list", "-r", "res", cwd=tmp_path)
    assert "2 / 2" in listed.stdout and "complete" in listed.stdout


def test_plan_states_a_seed_only_when_the_run_will_use_it(tmp_path):
    """A listing's own draw is not the seed a run draws: `fslab plan` names a seed only when
    the study fixes one."""
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "x"\n[filesystems.ext4]\n[[workloads]]\nkind = "fio"\nname = "w"\n'
                     'rw = "read"\nsize = "64M"\n')
    drawn = subprocess.run([sys.executable, "-m", "fslab", "plan", str(study), "--json"], capture_output=True,
                           text=True, check=True)
    assert json.loads(drawn.stdout)["seed"] is None
    text = subprocess.run([sys.executable, "-m", "fslab", "plan", str(study)], capture_output=True, text=True,
                          check=True).stdout
    assert "seed drawn when the study runs" in " ".join(text.split())
    study.write_text(study.read_text().replace('name = "x"', 'name = "x"\nseed = 42'))
    fixed = subprocess.run([sys.executable, "-m", "fslab", "plan", str(study), "--json"], capture_output=True,
                           text=True, check=True)
    assert json.loads(fixed.stdout)["seed"] == 42


def test_plan_of_an_array_on_named_disks_shows_no_member_images(device_support, tmp_path):
    """Named members are the user's disks: the default member_size (of member images) would
    read as the disks' size. (The disks must exist: plan checks them as run does.)"""
    loops = []
    try:
        for i in range(3):
            image = tmp_path / f"m{i}.img"
            image.write_bytes(b"")
            os.truncate(image, 64 << 20)
            loops.append(subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True,
                                        text=True, check=True).stdout.strip())
        study = tmp_path / "named.toml"
        study.write_text('[study]\nname = "x"\nbackend = "guest"\n[device]\nkind = "raid"\nlevel = 5\n'
                         f'members = {json.dumps(loops)}\n[filesystems.ext4]\n[[workloads]]\n'
                         'kind = "fio"\nname = "w"\nrw = "read"\nsize = "16M"\n')
        done = fslab("plan", str(study))
    finally:
        for loop in loops:
            subprocess.run(["losetup", "-d", loop], check=False)
    [line] = [x for x in done.stdout.splitlines() if x.startswith("device:")]
    assert f"members=[{', '.join(loops)}]" in line and "member_size" not in line
    assert line.endswith("force=false")  # as the study file says it, not Python's False


def test_a_one_run_study_is_counted_in_the_singular(tmp_path):
    """'1 cell x 1 repetition = 1 run' and '1 run in 0 s', not '1 runs' (a fake device and
    the null workload: no root, no tool)."""
    study = tmp_path / "one.toml"
    study.write_text('[study]\nname = "one"\nrepetitions = 1\n[device]\nkind = "fake"\n'
                     '[filesystems.plain]\ntype = "null"\n[[workloads]]\nkind = "null"\nname = "w"\n')
    planned = " ".join(fslab("plan", str(study), "-r", "res", cwd=tmp_path).stdout.split())
    assert "1 cell x 1 repetition = 1 run," in planned
    assert "1 from its stated runtime only" in planned and "1 runs" not in planned
    done = fslab("run", str(study), "-r", "res", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 run in " in done.stdout and "1 runs" not in done.stdout + done.stderr
