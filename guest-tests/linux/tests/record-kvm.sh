#!/bin/sh
# record-kvm: record.sh for guests under KVM (guest-tests/nested), where a
# PMI is injected at the guest's next VM entry instead of at the overflowing
# instruction.  The same workload, periods and checks as record.sh, except
# that ">= 99% in hot_loop" is of the user-mode samples: under L1's KVM
# (emulated vPMU) 1-2% of all samples land at one guest kernel address,
# where the guest was when KVM injected the PMI after an exit.  The kernel's
# share is printed.  The cycles-rate check is record.sh's (skipped under
# nested KVM, vpmu.nested=1).
VPMU_RECORD_USER=1
export VPMU_RECORD_USER
exec sh /vpmu/tests/record.sh
