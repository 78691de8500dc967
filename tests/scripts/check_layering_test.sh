#!/usr/bin/env bash
# scripts/check_layering.sh fails on an include the component table forbids:
# run on a scratch git work tree (ORDERWIRE_LAYERING_ROOT) of a few files,
# it passes while the includes follow the table, and exits 1 naming the
# file, the line and the include once a deliberate violation is added (the
# service including the NATS side, the feed's codec including the engine or
# state/ or the subscriber's book, the book including the engine or state/,
# an internal/ header from another component, a top-level directory
# the table does not know).
#
#   check_layering_test.sh PATH/TO/check_layering.sh
set -euo pipefail
script=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
cd "$tree"
git init -q .

mkdir -p base codec state service cluster replication cli
printf '#pragma once\n' > base/clock.h
printf '#include "base/clock.h"\n' > codec/frame.h
printf '#include "codec/frame.h"\n' > state/state_machine.h
printf '#include "state/state_machine.h"\n#include <vector>\n' \
  > service/service.h
printf '#include "codec/frame.h"\n' > replication/lease.h
printf '#include "service/service.h"\n#include "replication/lease.h"\n' \
  > cluster/replication_link.h
printf '#include "cluster/replication_link.h"\n' > cli/main.cc

fail=0
expect_pass() {
  local out
  if ! out=$(ORDERWIRE_LAYERING_ROOT="$tree" "$script" 2>&1); then
    echo "FAIL: $1: the check refused a clean tree:"; echo "$out"
    fail=1
  else
    echo "ok: $1"
  fi
}
# expect_refusal WHAT FILE LINE INCLUDE: exit 1, naming FILE:LINE: INCLUDE.
expect_refusal() {
  local out status=0
  out=$(ORDERWIRE_LAYERING_ROOT="$tree" "$script" 2>&1) || status=$?
  if [ "$status" -ne 1 ]; then
    echo "FAIL: $1: exit $status, expected 1:"; echo "$out"
    fail=1
  elif ! grep -qF "$2:$3: $4" <<<"$out"; then
    echo "FAIL: $1: the offending line is not named ($2:$3: $4):"
    echo "$out"
    fail=1
  else
    echo "ok: $1: $(head -1 <<<"$out")"
  fi
}

expect_pass "a tree that follows the table"

# The service may not include the NATS side (it knows nothing of NATS).
printf '#include "state/state_machine.h"\n#include "replication/lease.h"\n' \
  > service/service.h
expect_refusal "service/ including replication/" service/service.h 2 \
  '#include "replication/lease.h"'
printf '#include "cluster/replication_link.h"\n' > service/service.h
expect_refusal "service/ including cluster/" service/service.h 1 \
  '#include "cluster/replication_link.h"'
# The deterministic core may not include the service.
printf '#include "state/state_machine.h"\n' > service/service.h
printf '#include "codec/frame.h"\n#include <service/service.h>\n' \
  > state/state_machine.h
expect_refusal "state/ including service/ (angle brackets)" \
  state/state_machine.h 2 '#include <service/service.h>'
printf '#include "codec/frame.h"\n' > state/state_machine.h
expect_pass "the violations removed"

# The feed's codec: on codec/, included by state/; it may include neither
# the engine nor state/.
mkdir -p feed engine
printf '#pragma once\n' > engine/engine.h
printf '#include "codec/frame.h"\n' > feed/packet.h
printf '#include "codec/frame.h"\n#include "feed/packet.h"\n' \
  > state/state_machine.h
expect_pass "state/ including feed/, feed/ including codec/"
printf '#include "codec/frame.h"\n#include "engine/engine.h"\n' > feed/packet.h
expect_refusal "feed/ including engine/" feed/packet.h 2 \
  '#include "engine/engine.h"'
printf '#include "state/state_machine.h"\n' > feed/packet.h
expect_refusal "feed/ including state/" feed/packet.h 1 \
  '#include "state/state_machine.h"'
printf '#include "codec/frame.h"\n' > feed/packet.h
printf '#include "codec/frame.h"\n' > state/state_machine.h
expect_pass "the feed's violations removed"

# The subscriber's book: on feed/ and codec/, included by cli/; it may
# include neither the engine nor state/, and the feed's codec may not
# include it.
mkdir -p marketdata
printf '#include "feed/packet.h"\n#include "codec/frame.h"\n' \
  > marketdata/book.h
printf '#include "cluster/replication_link.h"\n#include "marketdata/book.h"\n' \
  > cli/main.cc
expect_pass "marketdata/ including feed/, cli/ including marketdata/"
printf '#include "feed/packet.h"\n#include "engine/engine.h"\n' \
  > marketdata/book.h
expect_refusal "marketdata/ including engine/" marketdata/book.h 2 \
  '#include "engine/engine.h"'
printf '#include "state/state_machine.h"\n' > marketdata/book.h
expect_refusal "marketdata/ including state/" marketdata/book.h 1 \
  '#include "state/state_machine.h"'
printf '#include "feed/packet.h"\n' > marketdata/book.h
printf '#include "codec/frame.h"\n#include "marketdata/book.h"\n' \
  > feed/packet.h
expect_refusal "feed/ including marketdata/" feed/packet.h 2 \
  '#include "marketdata/book.h"'
printf '#include "codec/frame.h"\n' > feed/packet.h
printf '#include "cluster/replication_link.h"\n' > cli/main.cc
expect_pass "the book's violations removed"

# Another component's internal/ header (cli/ may include cluster/, not its
# internal/ part).
mkdir -p cluster/internal
printf '#pragma once\n' > cluster/internal/nats_start_wait.h
printf '#include "cluster/replication_link.h"\n#include "cluster/internal/nats_start_wait.h"\n' \
  > cli/main.cc
expect_refusal "cli/ including cluster/internal/" cli/main.cc 2 \
  '#include "cluster/internal/nats_start_wait.h" (cluster/internal/'
printf '#include "cluster/replication_link.h"\n' > cli/main.cc

# A top-level directory the table does not know.
mkdir -p metrics
printf '#pragma once\n' > metrics/text.h
printf '#include "state/state_machine.h"\n#include "metrics/text.h"\n' \
  > service/service.h
expect_refusal "an unknown component" service/service.h 2 \
  '#include "metrics/text.h"'
rm -r metrics
printf '#include "state/state_machine.h"\n' > service/service.h
expect_pass "the tree clean again"

exit $fail
