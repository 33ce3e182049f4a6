#!/usr/bin/env bash
# vpmu-helper as it runs: the real daemon, real perf_event_open, a client
# that is not root.  Started, checked and stopped here, at
# kernel.perf_event_paranoid 2 and 3 (set for the run, restored after):
#
#   - run as root, the daemon keeps CAP_PERFMON only, and CAP_SYS_ADMIN
#     too at paranoid 3 (Debian's level 3 checks for it);
#   - user nobody cannot open the perf source's task-clock event itself
#     (it counts kernel time: paranoid >= 2 forbids it), but gets it
#     through the helper, and it counts the 50 ms the client spins;
#   - a thread of another process is refused, with the reason;
#   - the daemon serves on, holds no fd more than before, and is stopped
#     by pid; its socket is gone;
#   - started by socket activation (LISTEN_FDS/LISTEN_PID), it serves
#     the socket it was given.
#
# Usage: helper-daemon.sh BUILD_DIR      (TAP on stdout)
set -uo pipefail

build=${1:?usage: helper-daemon.sh BUILD_DIR}
helper=$build/vpmu-helper
client=$build/tests/helper/helper-open
sysctl=/proc/sys/kernel/perf_event_paranoid
# shellcheck source=../../guest-tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../guest-tests/tap.sh"

tap_begin
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null ||
   ! id nobody >/dev/null 2>&1 || [ ! -w "$sysctl" ]; then
    tap_skip_all "needs root, setpriv, user nobody and a writable $sysctl"
fi

dir=$(mktemp -d /tmp/vpmu-helperd-XXXXXX)
chmod 0755 "$dir"
mkdir "$dir/policy"
echo "counters = 2" >"$dir/policy/default.conf"
old_paranoid=$(cat "$sysctl")
hpid=

cleanup() {
    if [ -n "$hpid" ]; then
        kill "$hpid" 2>/dev/null
        wait "$hpid" 2>/dev/null
    fi
    echo "$old_paranoid" >"$sysctl"
    rm -rf "$dir"
}
trap cleanup EXIT

as_nobody() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        --inh-caps=-all --bounding-set=-all -- "$@"
}

# start_helper: the daemon on $dir/sock, as root; waits for its socket.
start_helper() {
    "$helper" --socket "$dir/sock" --socket-group nogroup \
        --policy-dir "$dir/policy" 2>"$dir/helper.log" &
    hpid=$!
    for _ in $(seq 50); do
        [ -S "$dir/sock" ] && return 0
        sleep 0.1
    done
    return 1
}

stop_helper() {
    kill "$hpid" && wait "$hpid"
    local rc=$?
    hpid=
    return $rc
}

fds_of() {
    ls "/proc/$1/fd" | wc -l
}

# fds_back_to PID N: the helper closes a connection when it reads the
# client's hangup, which on a loaded host can come after the client has
# exited; wait for that (at most 5 s) before counting its fds.
fds_back_to() {
    for _ in $(seq 50); do
        [ "$(fds_of "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# CapEff: CAP_PERFMON is bit 38, CAP_SYS_ADMIN bit 21 (capability.h).
check_level() {
    local level=$1 want_caps=$2 out fds

    echo "$level" >"$sysctl"
    start_helper
    tap $? "paranoid $level: the helper starts and listens"
    out=$(awk '/^CapEff:/ { print $2 }' "/proc/$hpid/status")
    [ "$out" = "$want_caps" ]
    tap $? "paranoid $level: its capabilities are $want_caps (got $out)"
    fds=$(fds_of "$hpid")
    out=$(as_nobody "$client" --direct)
    [ "$out" = "refused -13" ]
    tap $? "paranoid $level: nobody's own task-clock event: EACCES ($out)"
    out=$(as_nobody "$client" "$dir/sock")
    [[ $out =~ ^ok\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 50000000 ]
    tap $? "paranoid $level: through the helper it opens and counts >= 50 ms ($out)"
    out=$(as_nobody "$client" "$dir/sock" 1)
    [[ $out =~ ^refused\ -1\ thread\ 1\ is\ not\ one\ of\ process\ [0-9]+$ ]]
    tap $? "paranoid $level: a thread of another process is refused ($out)"
    fds_back_to "$hpid" "$fds"
    tap $? "paranoid $level: the helper holds no fd more ($fds, now $(fds_of "$hpid"))"
    stop_helper && [ ! -e "$dir/sock" ]
    tap $? "paranoid $level: stopped by pid, its socket removed"
}

# Socket activation: the socket on fd 3, LISTEN_PID = the helper's pid.
check_activation() {
    local out
    python3 - "$dir/act.sock" "$helper" "$dir/policy" <<'EOF' &
import os, socket, sys
path, helper, policy = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
os.chmod(path, 0o666)
s.listen(4)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)     # also when the socket is fd 3 already
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execv(helper, [helper, "--policy-dir", policy])
EOF
    hpid=$!
    # Listening once python has become the helper (listen came first).
    for _ in $(seq 50); do
        [ "$(readlink "/proc/$hpid/exe")" = "$(readlink -f "$helper")" ] && break
        sleep 0.1
    done
    out=$(as_nobody "$client" "$dir/act.sock")
    [[ $out =~ ^ok\ [0-9]+$ ]]
    tap $? "socket activation: the helper serves the socket it was given ($out)"
    stop_helper
    tap $? "socket activation: stopped by pid"
}

check_level 2 0000004000000000
check_level 3 0000004000200000
check_activation
tap_end
