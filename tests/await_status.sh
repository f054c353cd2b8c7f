#!/bin/sh
# `make test`'s wait for a check it started in the background before the venv was made:
# the check writes its exit status to LOG.status when it ends. Prints the check's output
# and exits with its status.
log=$1
while [ ! -f "$log.status" ]; do sleep 0.5; done
cat "$log"
exit "$(cat "$log.status")"
