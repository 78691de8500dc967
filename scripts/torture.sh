#!/usr/bin/env bash
# The reliability run of orderwire (docs/RELIABILITY.md): SIGKILLs of serve
# under load, a full disk, a session flood, hostile datagrams beside a real
# session and journal damage, on loopback, bounded in time; prints the table.
# scripts/torture.py does the work; see its --help.
#
#   scripts/torture.sh [--short] [--strict] [BUILD_DIR]   (build/release)
set -euo pipefail
command -v python3 >/dev/null || {
  echo "torture.sh: python3 is needed (scripts/setup.sh)" >&2
  exit 2
}
exec python3 "$(dirname "$0")/torture.py" "$@"
