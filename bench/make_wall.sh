#!/usr/bin/env bash
# Wall time of `make run` and `make test` as a newcomer meets them (README, Performance): each in a
# fresh clone (a new .venv and Rust build; pip's and cargo's download caches as they are) with an
# empty `numalab vm` cache, as CI runs, then again in the same clone (warm). Not run by `make bench`
# (it takes as long as both targets do). Run it in the foreground: a background job inherits SIGINT
# ignored, and the tests of Ctrl-C then fail. Usage: bench/make_wall.sh [run|test]... (default: both)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d -t numalab-wall.XXXXXX)
trap 'rm -rf "$work"' EXIT
export NUMALAB_VM_CACHE="$work/vm-cache"

timed() {  # timed TARGET CLONE LABEL: run `make TARGET` in CLONE, print its wall time (and a failure)
  local start=$SECONDS load status=ok
  load=$(cut -d' ' -f1 /proc/loadavg)
  make -k -C "$2" "$1" >"$work/$1.log" 2>&1 || status="FAILED (make -k: the other targets ran), last lines:"
  printf 'make %-4s %-12s %4d s  (load average %s at the start, %s CPUs) %s\n' "$1" "$3" $((SECONDS - start)) "$load" "$(nproc)" "$status"
  [ "$status" = ok ] || tail -15 "$work/$1.log"
}

for target in "${@:-run test}"; do
  for t in $target; do
    clone="$work/clone-$t"
    git clone -q "$repo" "$clone"
    timed "$t" "$clone" "fresh clone"
    timed "$t" "$clone" "warm"
  done
done
