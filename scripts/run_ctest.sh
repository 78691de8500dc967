#!/usr/bin/env bash
# Runs a build tree's whole test suite (make test, make asan) as two CTest
# runs side by side, then checks the skips of both (scripts/check_skips.py).
#
#   scripts/run_ctest.sh PRESET BUILD_DIR
#
# The tests named "replication.*" start NATS clusters and spend most of
# their time waiting on NATS, leases and timeouts (release tree: 212 s of
# test time for 33 s of CPU, measured with /usr/bin/time). In one run with
# two jobs each would hold one of the two slots while it waits; here they
# run in a second CTest run (two jobs) beside the others (two jobs), so
# their waits overlap the CPU-bound tests. The release suite took 207 s
# this way against 332-358 s in one run, every test passing.
#
# Each run writes its own JUnit file in BUILD_DIR (ctest-junit.xml,
# ctest-junit-nats.xml) and prints its output when it ends (the NATS run's
# after the other's, not interleaved). Both share BUILD_DIR/Testing: its
# LastTest.log and cost data are CTest's own notes, read by nothing here.
# Exit 0 only when both runs pass and every skip is allowed.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ]; then
  echo "usage: $0 PRESET BUILD_DIR" >&2
  exit 2
fi
preset=$1
dir=$2
nats_log=$dir/ctest-nats.log

ctest --preset "$preset" -R '^replication\.' \
  --output-junit ctest-junit-nats.xml >"$nats_log" 2>&1 &
nats_pid=$!
# Stop the NATS run if this script is interrupted.
trap 'kill "$nats_pid" 2>/dev/null' INT TERM

ctest --preset "$preset" -E '^replication\.'
rest=$?
wait "$nats_pid"
nats=$?
trap - INT TERM
echo "== the replication (NATS) tests, run beside the others =="
cat "$nats_log"

skips=0
scripts/check_skips.py "$dir/ctest-junit.xml" || skips=$?
scripts/check_skips.py "$dir/ctest-junit-nats.xml" || skips=$?
if [ "$rest" -ne 0 ] || [ "$nats" -ne 0 ] || [ "$skips" -ne 0 ]; then
  echo "tests failed: the others exit $rest, the NATS tests exit $nats," \
       "skip check exit $skips" >&2
  exit 1
fi
