#!/bin/sh
# `make test`'s wait for the checks it started in the background before the venv was made
# (in DIR; PID the checks' session): they write their exit status to DIR/status when they
# end. Prints their output and exits with their status; fails if they are gone without one.
dir=$1 pid=$2
while [ ! -f "$dir/status" ]; do
	if ! kill -0 "$pid" 2>/dev/null && [ ! -f "$dir/status" ]; then
		cat "$dir/log" 2>/dev/null
		echo "the Rust checks ended without a verdict"
		exit 1
	fi
	sleep 0.5
done
cat "$dir/log"
exit "$(cat "$dir/status")"
