# fslab: `make demo` runs the quickstart study, `make test` runs the tests (and lint: ruff, mypy, clippy),
# `make test-fast` the host tier alone (no QEMU guest tests) for day-to-day work.
# Each target runs `setup` first, so either alone is enough on a fresh machine.

# The venv's interpreter: Debian's own build where it can make a venv (python3-venv), else
# the first python3 on PATH. Debian builds CPython with profile-guided and link-time
# optimisation and links libpython into the executable; a python3 built from source (pyenv's
# default) has neither. Every guest job pays for this twice over, since the guest runs the
# host's interpreter under TCG: the job entry's import in a TCG guest took 1.57-2.52 s on
# Debian's 3.11.2 against 3.08-3.41 s on pyenv's 3.11.7 (medians of 5, five runs each,
# alternated, 2026-12-02), and a pure-Python loop on the host 1.5-2x less time.
PYTHON ?= $(shell /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null && echo /usr/bin/python3 || echo python3)
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := fio bonnie++ fsmark dbench sysbench postmark e2fsprogs xfsprogs btrfs-progs ntfs-3g fusefat dosfstools \
	f2fs-tools jfsutils nilfs-tools util-linux fdisk \
	qemu-system-x86 busybox-static kmod mdadm dmsetup chromium
# Only real sources: generated .rs files under target/ must not trigger a reinstall.
RUST_SOURCES := $(shell find crates -name target -prune -o \( -name '*.rs' -o -name Cargo.toml -o -name Cargo.lock \) -print 2>/dev/null)

.PHONY: setup system-packages demo test test-fast bench lint clean

setup: system-packages $(VENV)/.installed

# Installs only what is missing, so a warm machine skips apt entirely.
system-packages:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		apt-get -o DPkg::Lock::Timeout=300 update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q $$missing; \
	fi
	@command -v cargo >/dev/null || { echo "cargo (Rust) is needed to build fslab's core: install rustup"; exit 1; }

# uv, not pip: it downloads and unpacks the dependencies side by side (on a fresh clone here
# 53 s against pip's 103 s, both from an empty cache), with the same versions. Bytecode
# compiled at install, as pip does (a guest reads the venv read-only and would compile the
# modules it imports at every start); fslab itself rebuilt whenever this rule runs, which is
# when a Rust source or pyproject.toml changed.
$(VENV)/.installed: pyproject.toml $(RUST_SOURCES) $(VENV)/.interpreter
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv
	$(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode --reinstall-package fslab -e '.[dev,dask]'
	touch $@

# Which interpreter the venv was made on: when PYTHON names another, the venv is made
# again (a venv from before the choice above stays on its source-built python3 otherwise).
# The file is rewritten only when it changes, so an unchanged one remakes nothing.
$(VENV)/.interpreter: FORCE
	@want='$(PYTHON)'; [ "$$(cat $@ 2>/dev/null)" = "$$want" ] || \
		{ rm -rf $(VENV) && mkdir -p $(VENV) && echo "$$want" > $@; }

.PHONY: FORCE
FORCE:

demo: setup
	$(BIN)/fslab run quickstart

# The host tier runs on pytest-xdist workers, a test file per worker (its module fixtures
# made once). `make test` runs the guest tier (one test at a time, the longer tier) beside
# lint, the Rust core's tests and then the host tier on WORKERS workers, and prints the
# guest tier's output when all have ended (tests/run_tiers.py). `WORKERS=0`: serially.
# GUEST_TAIL: guest test files the host tier's lane runs after its own tests, on the core
# the guest tier leaves idle once the host tier is done (a fresh clone here, 2026-12-01: the
# host tier 720 s, the guest tier 783 s with the session file's 25 s in it, which the tail
# then took). The named-disks study went too (2026-12-03): in five fresh clones the guest
# tier still ended 47-204 s after the host's lane (median 131 s), and that file took 24-69 s,
# less than the gap in each of them. Each file boots a guest of its own either way.
WORKERS ?= 3
GUEST_TAIL ?= tests/guest/test_guest_session.py tests/guest/test_guest_named_disks.py

# The Rust core's checks (clippy, its tests) need no venv: they start before it is made and
# run beside uv and the release build (their own target folder, so neither waits on the
# other's lock), and the host tier's lane waits for their verdict after ruff and mypy. On a
# fresh clone they took 44 s of that lane; the venv's make leaves a core idle part of its time.
# They run in a session of their own, with their output and status in a folder of this run
# (never an earlier run's verdict), and are stopped when the recipe ends however it ends.
# The Debian packages are installed beside the venv's make too (on a fresh machine apt takes
# about as long as uv and the release build), their output shown when both are done; the
# tiers start once both have.
test:
	@command -v cargo >/dev/null || { echo "cargo (Rust) is needed to build fslab's core: install rustup"; exit 1; }
	@dir=$$(mktemp -d "$(CURDIR)/.rust-checks.XXXXXX"); \
	setsid sh -c '($(RUST_CHECKS)); echo $$? > "$$0/status.tmp"; mv "$$0/status.tmp" "$$0/status"' "$$dir" \
		> "$$dir/log" 2>&1 & checks=$$!; \
	$(MAKE) --no-print-directory system-packages > "$$dir/apt.log" 2>&1 & apt=$$!; \
	trap 'kill -TERM -$$checks 2>/dev/null; kill $$apt 2>/dev/null; rm -rf "$$dir"' EXIT; trap 'exit 130' INT TERM; \
	$(MAKE) --no-print-directory $(VENV)/.installed && \
	{ wait $$apt; status=$$?; cat "$$dir/apt.log"; \
	  [ $$status = 0 ] || { echo "make test: installing the Debian packages failed (above)"; exit 1; }; } && \
	$(BIN)/python tests/run_tiers.py --workers $(WORKERS) --first "$(PY_LINT)" \
		--first "sh tests/await_status.sh '$$dir' $$checks" $(foreach f,$(GUEST_TAIL),--guest-tail $(f))

# The host tier alone: every test but those that boot a QEMU guest (marker `guest`), on more
# workers than a 2-core machine has cores, since most of its tests wait on devices, mounts,
# fio's runtime and timers (2026-12-02, a 2-core machine: 6 workers 238 and 252 s, 4
# workers 310 s; its CPU 390 s either way). `FAST_WORKERS=0`: serially.
FAST_WORKERS ?= 6
test-fast: setup
	$(BIN)/pytest -q -n $(FAST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not guest"

bench: setup
	$(BIN)/python -m bench

# One verdict each for ruff, mypy and clippy (the last on the Rust core).
PY_LINT := $(BIN)/ruff check python tests bench && $(BIN)/mypy
CLIPPY := (cd crates/fslab-core && CARGO_TARGET_DIR=target/checks cargo clippy -q -- -D warnings)
LINT := $(PY_LINT) && $(CLIPPY)
RUST_CHECKS := $(CLIPPY) && (cd crates/fslab-core && CARGO_TARGET_DIR=target/checks cargo test -q)

lint: setup
	$(LINT)

clean:
	rm -rf $(VENV) crates/fslab-core/target
