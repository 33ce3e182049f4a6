#!/bin/sh
# operator-pin: the guest side of guest-tests/operator/operator-libvirt.py.
# After vpmu.operator_delay= seconds (default 40: the host starts the
# operator's events and Prometheus' scrapes meanwhile), pin1_10M moves
# itself to CPU 1 and retires 2N + 6 user instructions there; with
# isolcpus=1 on the command line nothing else runs at CPL 3 on CPU 1, so
# the operator's instructions:u of vCPU 1 grow by exactly that.  The
# host reads the marks on the console.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 2

delay=$(cmdline_arg vpmu.operator_delay)
# (nproc counts this shell's CPUs: CPU 0 alone, with CPU 1 isolated.)
online=$(cat /sys/devices/system/cpu/online)
check "two CPUs, CPU 1 isolated (online $online)" \
    sh -c '[ "$1" = 0-1 ] && grep -q "isolcpus=1" /proc/cmdline' - "$online"

sleep "${delay:-40}"
echo "OPERATOR-PIN start"
"$BIN/pin1_10M"
rc=$?
echo "OPERATOR-PIN end rc=$rc"
check "pin1_10M ran on CPU 1 (exit $rc)" [ "$rc" = 0 ]
sleep 10    # the host's last scrapes see the end
finish
