#!/bin/sh
# orderwire::service knows nothing of NATS (service/replication_gate.h; the
# NATS side is cluster/): no symbol of the service library names libnats,
# replication/ or cluster/, and the service's test binaries neither have
# libnats on their link line nor load it. Each check is first made where
# NATS is (the replication library, a cluster test binary), so that a check
# that can no longer see NATS fails instead of passing.
#
#   links_no_nats.sh NM READELF NINJA BUILD_DIR SERVICE_LIB NATS_LIB \
#       NATS_BINARY BINARY...
#
# NINJA empty (another generator than Ninja): the link lines are not read.
set -eu
nm=$1 readelf=$2 ninja=$3 build=$4 service_lib=$5 nats_lib=$6 nats_binary=$7
shift 7

# libnats' C API (natsConnection_..., js_..., kvStore_...) and our NATS
# components, defined or undefined.
pattern='(^|[^A-Za-z0-9_])(nats[A-Z][A-Za-z]*_|js_|kvStore|kvEntry|orderwire::(replication|cluster)::)'

link_line() {  # the command that links binary $1 (built in $build)
  "$ninja" -C "$build" -t commands "${1#"$build"/}" | tail -n 1
}
needs_libnats() {
  "$readelf" -d "$1" | grep NEEDED | grep libnats
}

broken() {
  echo "links_no_nats: $*: the check is broken" >&2
  exit 1
}
"$nm" -C "$nats_lib" | grep -q -E "$pattern" ||
  broken "the pattern finds no NATS symbol in $nats_lib"
needs_libnats "$nats_binary" >/dev/null ||
  broken "$nats_binary does not show libnats as NEEDED"
if [ -n "$ninja" ]; then
  link_line "$nats_binary" | grep -q -E -- '-lnats|libnats' ||
    broken "the link line of $nats_binary does not name libnats"
fi

status=0
found=$("$nm" -C "$service_lib" | grep -E "$pattern" || true)
if [ -n "$found" ]; then
  echo "links_no_nats: $service_lib names NATS:" >&2
  echo "$found" >&2
  status=1
fi
for binary in "$@"; do
  if needs_libnats "$binary" >&2; then
    echo "links_no_nats: $binary loads libnats" >&2
    status=1
  fi
  if [ -n "$ninja" ] && link_line "$binary" | grep -q -E -- '-lnats|libnats'; then
    echo "links_no_nats: $binary has libnats on its link line" >&2
    status=1
  fi
done
if [ $status -eq 0 ]; then
  echo "links_no_nats: $service_lib and $# service binaries: no NATS"
fi
exit $status
