#!/usr/bin/env bash
# A one-node Slurm on this machine, for numalab's --slurm tests and for trying --slurm by hand:
# installs Debian's slurm-wlm and munge if they are missing (as root, with apt), writes a
# configuration for this machine's CPUs and memory into $NUMALAB_SLURM_DIR (default
# /tmp/numalab-slurm), and starts munged, slurmctld and slurmd there. `down.sh` stops them.
# Prints `export SLURM_CONF=...`: sbatch, squeue, scancel and dask-jobqueue find the cluster through it.
# Exit status 3: Slurm cannot be installed here (the tests then skip, saying why); 1: it is
# installed but did not start (the tests fail, pointing at the logs).
set -euo pipefail
dir=${NUMALAB_SLURM_DIR:-/tmp/numalab-slurm}
partition=${NUMALAB_SLURM_PARTITION:-numalab}
say() { echo "slurm up: $*" >&2; }
cannot() { say "$*"; exit 3; }
failed() { say "$*"; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || cannot "slurm-wlm and munge are missing and cannot be installed here (needs root and apt-get)"
  say "installing slurm-wlm and munge (apt)"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } >/dev/null \
    || cannot "apt-get could not install slurm-wlm and munge"
fi
[ "$(id -u)" = 0 ] || cannot "slurmd runs jobs as their users: start it as root"

mkdir -p "$dir"/{state,spool,log,run,munge}
chmod 700 "$dir/munge"
# munge: a key of our own, its socket in $dir, so a system munged (if any) is left alone.
[ -s "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
socket="$dir/munge/munge.socket"
if ! munge -n -S "$socket" >/dev/null 2>&1; then
  munged --force -S "$socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/run/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
    || failed "munged did not start (see $dir/log/munged.log)"
fi

host=$(hostname -s)
ctld_port=${NUMALAB_SLURMCTLD_PORT:-16817}
slurmd_port=${NUMALAB_SLURMD_PORT:-16818}
cpus=$(nproc)
# Slurm refuses a node whose RealMemory exceeds what slurmd finds: ask slurmd itself.
mem_mib=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
mem_mib=${mem_mib:-1024}
cat > "$dir/slurm.conf" <<CONF
# Written by .ci/slurm/up.sh: one node, this machine.
ClusterName=numalab
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
# No cgroup hierarchy is assumed (containers, CI runners): plain process tracking.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem_mib State=UNKNOWN
PartitionName=$partition Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$dir/slurm.conf"

[ -f "$dir/run/slurmctld.pid" ] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null \
  || slurmctld -i || failed "slurmctld did not start (see $dir/log/slurmctld.log)"
[ -f "$dir/run/slurmd.pid" ] && kill -0 "$(cat "$dir/run/slurmd.pid")" 2>/dev/null \
  || slurmd || failed "slurmd did not start (see $dir/log/slurmd.log)"

for _ in $(seq 1 60); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  case "$state" in idle*|mixed*|allocated*) echo "export SLURM_CONF=$SLURM_CONF"; exit 0 ;; esac
  sleep 0.5
done
failed "the node did not come up within 30 s (state '${state:-none}'; see $dir/log/slurmctld.log and slurmd.log)"
