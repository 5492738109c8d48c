#!/usr/bin/env bash
# Stops what up.sh started (slurmd, slurmctld, munged) and cancels any job left in its cluster.
set -uo pipefail
dir=${NUMALAB_SLURM_DIR:-/tmp/numalab-slurm}
[ -f "$dir/slurm.conf" ] && SLURM_CONF="$dir/slurm.conf" scancel --quiet --user="$(id -un)" 2>/dev/null
for d in slurmd slurmctld munged; do
  pidf="$dir/run/$d.pid"
  [ -f "$pidf" ] || continue
  pid=$(cat "$pidf")
  kill "$pid" 2>/dev/null && for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$pidf"
done
