#!/bin/sh
# perf-mmap-kvm: perf-test.sh for the "mmap interface" tests only (4.1
# samples through the mmap ring, 4.2/4.3 user-space counter reads with
# RDPMC, which KVM answers from its own PMCs).  The nested suite's vpmu L2
# runs this instead of the whole list: there the full list outruns the L2's
# time limit (perf test 24, retried on one CPU, under nested TCG exits).
VPMU_PERF_WANT='mmap interface tests'
export VPMU_PERF_WANT
exec sh /vpmu/tests/perf-test.sh
