#!/bin/sh
# demo: what `make demo` shows: stock Debian perf inside a TCG guest whose
# PMU is vpmu.  Not a test: it prints perf's own output.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh

echo "==> the guest kernel found a PMU:"
dmesg | grep -E "Performance Events|perf:|NMI watchdog" | sed 's/^/    /'
echo
echo "==> perf stat -e instructions:u,branches:u,instructions,cycles,ref-cycles ./loop_10M"
echo "    (loop_10M: mov; 10,000,000 x {dec; jnz}; mov; xor; syscall:"
echo "     exactly 20,000,004 user instructions and 10,000,001 branches)"
perf stat -e instructions:u,branches:u,instructions,cycles,ref-cycles \
    "$BIN/loop_10M" 2>&1 | sed 's/^/    /'
echo "==> perf record -e instructions:u -c 100003 ./hot"
perf record -q -o /tmp/demo.data -e instructions:u -c 100003 "$BIN/hot" \
    2>&1 | sed 's/^/    /'
echo "==> perf report --stdio --sort symbol"
perf report -i /tmp/demo.data --stdio --sort symbol 2>/dev/null |
    grep -v '^$' | sed 's/^/    /'
echo "==> perf stat -a -e instructions sleep 1 (all CPUs, kernel and user)"
perf stat -a -e instructions,cycles sleep 1 2>&1 | sed 's/^/    /'
exit 0
