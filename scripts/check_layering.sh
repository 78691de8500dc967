#!/usr/bin/env bash
# Layering check: every #include of one of our own headers must respect the
# component graph below. Prints every offending include and exits 1; exits 0
# when the tree is clean. Reads the files git knows about (tracked, plus new
# files not yet added and not ignored), so it works on a clean clone and on a
# working tree alike. bash + git + grep + awk; well under a second.
#
#   scripts/check_layering.sh
#
# ORDERWIRE_LAYERING_ROOT=DIR checks the git work tree DIR instead of this
# repository (the test tests/scripts/check_layering_test.sh runs it on a
# scratch tree with a forbidden include).
#
# Components (top-level directories) and what each may include besides
# itself:
#
#   base/      nothing (header-only utilities)
#   codec/     base/
#   feed/      codec/ base/          (the market-data feed's wire codec;
#                                    included by state/, service/, cluster/,
#                                    marketdata/ and cli/)
#   marketdata/  base/ codec/ feed/  (the feed's subscriber side: the
#                                    Subscriber and its L3 book; included
#                                    by service/ (the snapshot server's
#                                    replica of the book) and cli/)
#   jsonl/     codec/ base/ feed/    (the JSON Lines form of frames and of
#                                    feed messages; neither codec/ nor
#                                    feed/ may include it)
#   engine/    codec/ base/
#   journal/   codec/ base/
#   auth/      codec/ base/          (the datagram MAC and session keys)
#   net/       codec/ base/ auth/    (the UDP transport)
#   client/    base/ codec/ auth/ net/  (the order-entry client: Session)
#   config/    base/ codec/ engine/ auth/ net/  (the TOML configuration)
#   state/     base/ codec/ feed/ engine/ journal/ config/  (the
#              deterministic core that the service, replay and the standby
#              share)
#   service/   base/ codec/ feed/ marketdata/ engine/ journal/ net/ auth/
#              config/ state/ (the primary's loop; marketdata/ for the
#              Book the feed's request server keeps to serve snapshots; it
#              knows nothing of NATS: the replicated mode comes in through
#              service/replication_gate.h)
#   replication/  base/ codec/ journal/  (the journal on NATS JetStream; it
#              links libnats, so only cluster/ and cli/ include it)
#   cluster/   base/ codec/ feed/ engine/ journal/ net/ auth/ config/
#              state/ service/ replication/  (the primary's replication, the
#              standby, the takeover, seeding: service's interfaces on
#              replication/; with replication/, the only libnats user)
#   cli/       every library component above (not tests/ bench/ fuzz/
#              examples/: the shipped binary does not link test code)
#   tests/ bench/ fuzz/ examples/    anything
#
# internal/ headers: "X/internal/..." is the private part of component X. It
# may be included only from
#   - X/ itself,
#   - tests/X/  (white-box tests; today tests/journal/ uses journal/internal/
#                io_queue.h to inject I/O faults),
#   - bench/X/ or bench/X_*.cc  (today bench/engine_bench.cc measures
#                engine/internal/ pool, order index and sorted levels).
# Anything else (another component, cli/, fuzz/, examples/, tests/ or bench/
# of another component) is an error. Note that a public header may still
# include its own internal/ headers (engine/engine.h does): the rule is about
# who names internal/ paths, not about what reaches a translation unit.
#
# What counts as "ours": an include whose first path segment is a component
# above, or any other top-level directory of the repository (then it is an
# error until that directory gets a row in the table below). Anything else
# ("absl/...", "gtest/...", "benchmark/...", a bare "x.h") is external or
# local and not checked. <...> includes are checked too, so the rule cannot
# be sidestepped with angle brackets, but only when the repository has that
# file (<net/if.h> is the system header, not net/).
set -euo pipefail
cd "${ORDERWIRE_LAYERING_ROOT:-$(dirname "$0")/..}"

# component -> the components it may include (itself is always allowed).
# "*" = anything ours; "lib" = every library component.
declare -A allowed=(
  [base]=""
  [codec]="base"
  [feed]="base codec"
  [marketdata]="base codec feed"
  [jsonl]="codec base feed"
  [engine]="codec base"
  [journal]="codec base"
  [auth]="codec base"
  [net]="codec base auth"
  [client]="base codec auth net"
  [config]="base codec engine auth net"
  [state]="base codec feed engine journal config"
  [service]="base codec feed marketdata engine journal net auth config state"
  [cluster]="base codec feed engine journal net auth config state service replication"
  [replication]="base codec journal"
  [cli]="lib"
  [tests]="*"
  [bench]="*"
  [fuzz]="*"
  [examples]="*"
)
libs="base codec feed marketdata jsonl engine journal auth net client config state service replication cluster cli"

components="${!allowed[*]}"
# Every top-level directory of the repository (so that a new one that is not
# in the table above is reported rather than silently treated as external).
repofiles=$(git ls-files --cached --others --exclude-standard)
topdirs=$(printf '%s\n' "$repofiles" |
  awk -F/ 'NF > 1 { print $1 }' | sort -u | tr '\n' ' ')

dirs=()
for c in $components; do
  [ -d "$c" ] && dirs+=("$c")
done
[ ${#dirs[@]} -eq 0 ] && exit 0

# git ls-files may list a file deleted in the working tree: grep -s skips it.
# grep exits 1 when nothing matches: that is not an error here.
includes=$(git ls-files -z --cached --others --exclude-standard -- \
    "${dirs[@]/%//*.h}" "${dirs[@]/%//*.cc}" |
  xargs -0 -r grep -sHnE \
    '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]+/[^">]*[">]' |
  sort -t: -k1,1 -k2,2n || true)

spec=$(for c in $components; do printf '%s=%s;' "$c" "${allowed[$c]}"; done)
if printf '%s\n' "$includes" | REPOFILES="$repofiles" awk \
    -v components="$components" -v topdirs="$topdirs" -v libs="$libs" \
    -v allowed_spec="$spec" '
    BEGIN {
      n = split(components, cs, " ")
      for (i = 1; i <= n; i++) known[cs[i]] = 1
      n = split(topdirs, ts, " ")
      for (i = 1; i <= n; i++) top[ts[i]] = 1
      n = split(ENVIRON["REPOFILES"], rs, "\n")
      for (i = 1; i <= n; i++) repofile[rs[i]] = 1
      n = split(allowed_spec, specs, ";")
      for (i = 1; i <= n; i++) {
        if (specs[i] == "") continue
        eq = index(specs[i], "=")
        c = substr(specs[i], 1, eq - 1)
        list = substr(specs[i], eq + 1)
        if (list == "lib") list = libs
        desc[c] = list
        m = split(list, as, " ")
        for (j = 1; j <= m; j++) ok[c, as[j]] = 1
        ok[c, c] = 1
      }
      bad = 0
    }
    {
      # $0 = file:line:text  (our paths contain no colon)
      file = $0; sub(/:.*/, "", file)
      rest = substr($0, length(file) + 2)
      line = rest; sub(/:.*/, "", line)
      text = substr(rest, length(line) + 2)
      inc = text
      sub(/^[^"<]*["<]/, "", inc); sub(/[">].*/, "", inc)
      angle = (text ~ /^[[:space:]]*#[[:space:]]*include[[:space:]]*</)
      spelled = "#include " (angle ? "<" inc ">" : "\"" inc "\"")

      split(file, fp, "/"); from = fp[1]
      split(inc, ip, "/");  to = ip[1]
      if (!(to in known) && !(to in top)) next     # external / local
      # <net/if.h> is the system header, not ours: an angle-bracket include
      # is ours only if the repository has that file.
      if (angle && !(inc in repofile)) next
      where = file ":" line ": " spelled

      if (!(to in known)) {
        print where " (" to "/ is not a component known to scripts/check_layering.sh)"
        bad = 1; next
      }
      if (desc[from] != "*" && !((from, to) in ok)) {
        d = desc[from]
        if (d == "") d = "nothing of ours"
        else { gsub(/ /, "/, ", d); d = "only " d "/" }
        print where " (" from "/ may include " d ")"
        bad = 1; next
      }
      if (inc ~ /\/internal\// && from != to) {
        own = 0
        if ((from == "tests" || from == "bench") && fp[2] == to) own = 1
        if (from == "bench" && index(fp[2], to "_") == 1) own = 1
        if (!own) {
          print where " (" to "/internal/ may be included only from " to \
                "/, tests/" to "/ and bench/" to "[/_])"
          bad = 1
        }
      }
    }
    END { exit bad }
  '; then
  exit 0
fi
echo "check_layering: the includes above break the component layering" \
  "(rules: header of scripts/check_layering.sh)" >&2
exit 1
