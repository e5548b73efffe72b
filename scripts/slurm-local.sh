#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the scale-out tests and for trying
# docs/scale-out.md by hand: `scripts/slurm-local.sh start|stop|status`.
#
# Uses Debian's slurmctld, slurmd, slurm-client and munge packages (installed with apt-get
# when missing and we are root). Needs root and no systemd: the daemons are started by hand
# and stopped by the PIDs this script recorded, never by name. The configuration is the
# smallest that runs jobs: one node with this machine's CPUs and memory (from `slurmd -C`),
# process tracking by /proc (proctrack/linuxproc), no task binding (task/none, no cgroups),
# select/cons_tres, and no accounting database. It is written to /etc/slurm/slurm.conf,
# where the client commands (sbatch, squeue, scancel) look for it, unless one is already
# there that this script did not write.
set -euo pipefail

STATE=/var/lib/hashrace-slurm
CONF=/etc/slurm/slurm.conf
MARK="# written by hashrace scripts/slurm-local.sh"
PARTITION=hashrace

die() {
	printf 'slurm-local.sh: %s\n' "$*" >&2
	exit 1
}

usage() {
	cat <<'EOF'
Usage: scripts/slurm-local.sh start|stop|status

start   install the packages if missing (apt-get, root), write the configuration, start
        munged, slurmctld and slurmd, and wait (at most 60 s) until the node is idle.
stop    stop the three daemons by the PIDs that start recorded.
status  print sinfo, or say that the cluster is not running.
EOF
}

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
	local missing=()
	for cmd in munged slurmctld slurmd sbatch; do
		command -v "$cmd" >/dev/null || missing+=("$cmd")
	done
	((${#missing[@]})) || return 0
	command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
	echo "slurm-local.sh: installing slurmctld slurmd slurm-client munge"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
}

write_config() {
	if [[ -f $CONF ]] && ! grep -qF "$MARK" "$CONF"; then
		die "$CONF exists and was not written by this script; not touching it"
	fi
	local node host
	host=$(hostname -s)
	# `slurmd -C` prints the node line as slurmd itself will see the hardware.
	node=$(slurmd -C | head -n 1)
	[[ $node == NodeName=* ]] || die "slurmd -C did not print a node line: $node"
	mkdir -p "$STATE/ctld" "$STATE/d" "$STATE/log" /etc/slurm
	cat >"$CONF" <<EOF
$MARK
ClusterName=hashrace
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Look at the queue every few seconds, not every minute: tests wait on it.
SchedulerParameters=sched_interval=2,bf_interval=2
MpiDefault=none
ReturnToService=2
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
# A cancelled task gets SIGTERM, then SIGKILL after this many seconds.
KillWait=5
$node
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
	alive "$STATE/munged.pid" && return 0
	mkdir -p /run/munge /var/log/munge /var/lib/munge
	chown munge:munge /run/munge /var/log/munge /var/lib/munge
	chmod 0755 /run/munge
	if [[ ! -s /etc/munge/munge.key ]]; then
		mkdir -p /etc/munge
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 status=none
		chown munge:munge /etc/munge/munge.key
		chmod 0400 /etc/munge/munge.key
	fi
	# munged forks into the background itself and writes its PID file.
	runuser -u munge -- munged --pid-file=/run/munge/munged.pid
	cp /run/munge/munged.pid "$STATE/munged.pid"
}

wait_idle() {
	local deadline=$((SECONDS + 60)) state
	while ((SECONDS < deadline)); do
		state=$(sinfo -h -o '%t' 2>/dev/null | head -n 1 || true)
		case $state in
		idle* | mix* | alloc*) return 0 ;;
		esac
		sleep 0.5
	done
	die "the node did not become idle within 60 s (state '${state:-none}'); see $STATE/log/"
}

start() {
	[[ $(id -u) == 0 ]] || die "start needs root (daemons, /etc/slurm, munge key)"
	install_packages
	write_config
	mkdir -p "$STATE"
	start_munge
	# -s is not used: both daemons fork and write the PID files named in slurm.conf.
	alive "$STATE/slurmctld.pid" || slurmctld -i
	alive "$STATE/slurmd.pid" || slurmd
	wait_idle
	echo "slurm-local.sh: running (partition $PARTITION, $(sinfo -h -o '%c') CPUs); logs in $STATE/log"
}

stop() {
	local f pid
	for f in slurmd slurmctld munged; do
		alive "$STATE/$f.pid" || continue
		pid=$(cat "$STATE/$f.pid")
		kill "$pid"
		# Wait (at most 10 s) so that a `start` right after does not find it still alive.
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && die "$f (pid $pid) did not stop"
		rm -f "$STATE/$f.pid"
	done
	echo "slurm-local.sh: stopped"
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) alive "$STATE/slurmctld.pid" && sinfo || { echo "not running"; exit 1; } ;;
-h | --help) usage ;;
*) usage >&2; exit 2 ;;
esac
