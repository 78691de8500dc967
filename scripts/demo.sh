#!/usr/bin/env bash
# The main job: what `make demo` runs, given the build directory.
# Today: the codec's figures on a million generated command frames.
set -euo pipefail
build=${1:-build/release}
ow="$build/cli/orderwire"
echo "== orderwire codec: decode a mixed stream of 1,000,000 command frames =="
pin=()
command -v taskset >/dev/null && pin=(taskset -c "$(($(nproc) - 1))")
"${pin[@]}" "$ow" bench-decode --count 1000000 --seed 1
