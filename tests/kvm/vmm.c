/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A minimal VMM: see vmm.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "proto.h"
#include "vmm.h"

#define CPUID_MAX_ENTRIES   256
/* Leaves vpmu answers that KVM may not list (then they are added). */
static const uint32_t pmu_leaves[] = { 0x0, 0x1, 0xA, 0x80000000, 0x80000001,
                                       0x80000022 };

/* Flat 4 GiB segments (SDM Vol. 3A 3.4.5): G=1, D/B=1, P=1, S=1. */
#define GDT_CODE 0x00CF9B000000FFFFull     /* execute/read, accessed */
#define GDT_DATA 0x00CF93000000FFFFull     /* read/write, accessed */
#define CR0_PE   (1u << 0)
#define CR0_ET   (1u << 4)
#define RFLAGS_FIXED (1u << 1)

static int fail(char *err, size_t errlen, int ret, const char *what)
{
    snprintf(err, errlen, "%s: %s", what, strerror(-ret));
    return ret;
}

static int enable_msr_exits(Vmm *v, const VpmuConfig *cfg, char *err,
                            size_t errlen)
{
    struct kvm_enable_cap cap = { .cap = KVM_CAP_X86_USER_SPACE_MSR,
                                  .args = { KVM_MSR_EXIT_REASON_FILTER } };
    static uint8_t bitmaps[VPMU_KVM_FILTER_BITMAP_BYTES];
    struct kvm_msr_filter filter;
    int ret;

    if (ioctl(v->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_USER_SPACE_MSR) <= 0 ||
        ioctl(v->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_MSR_FILTER) <= 0) {
        snprintf(err, errlen, "KVM lacks KVM_CAP_X86_USER_SPACE_MSR or "
                 "KVM_CAP_X86_MSR_FILTER");
        return -EOPNOTSUPP;
    }
    if (ioctl(v->vm_fd, KVM_ENABLE_CAP, &cap) < 0) {
        return fail(err, errlen, -errno, "KVM_ENABLE_CAP USER_SPACE_MSR");
    }
    ret = vpmu_kvm_msr_filter(cfg, &filter, bitmaps, sizeof(bitmaps));
    if (ret < 0) {
        return fail(err, errlen, ret, "vpmu_kvm_msr_filter");
    }
    if (ioctl(v->vm_fd, KVM_X86_SET_MSR_FILTER, &filter) < 0) {
        return fail(err, errlen, -errno, "KVM_X86_SET_MSR_FILTER");
    }
    return 0;
}

int vmm_open(Vmm *v, const VpmuConfig *cfg, char *err, size_t errlen)
{
    struct kvm_userspace_memory_region region = { 0 };
    int ret;

    memset(v, 0, sizeof(*v));
    v->kvm_fd = v->vm_fd = v->vcpu_fd = -1;
    v->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (v->kvm_fd < 0) {
        snprintf(err, errlen, "/dev/kvm: %s", strerror(errno));
        return -ENODEV;
    }
    if (ioctl(v->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IRQCHIP) <= 0) {
        snprintf(err, errlen, "KVM lacks KVM_CAP_IRQCHIP");
        return -EOPNOTSUPP;
    }
    v->vm_fd = ioctl(v->kvm_fd, KVM_CREATE_VM, 0);
    if (v->vm_fd < 0) {
        return fail(err, errlen, -errno, "KVM_CREATE_VM");
    }
    if (ioctl(v->vm_fd, KVM_CREATE_IRQCHIP) < 0) {
        return fail(err, errlen, -errno, "KVM_CREATE_IRQCHIP");
    }
    ret = enable_msr_exits(v, cfg, err, errlen);
    if (ret < 0) {
        return ret;
    }
    v->mem_size = PROTO_MEM_SIZE;
    v->mem = mmap(NULL, v->mem_size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (v->mem == MAP_FAILED) {
        v->mem = NULL;
        return fail(err, errlen, -errno, "mmap guest RAM");
    }
    region.memory_size = v->mem_size;
    region.userspace_addr = (uintptr_t)v->mem;
    if (ioctl(v->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
        return fail(err, errlen, -errno, "KVM_SET_USER_MEMORY_REGION");
    }
    v->vcpu_fd = ioctl(v->vm_fd, KVM_CREATE_VCPU, 0);
    if (v->vcpu_fd < 0) {
        return fail(err, errlen, -errno, "KVM_CREATE_VCPU");
    }
    ret = ioctl(v->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (ret < 0) {
        return fail(err, errlen, -errno, "KVM_GET_VCPU_MMAP_SIZE");
    }
    v->run_size = (size_t)ret;
    v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  v->vcpu_fd, 0);
    if (v->run == MAP_FAILED) {
        v->run = NULL;
        return fail(err, errlen, -errno, "mmap kvm_run");
    }
    return 0;
}

int vmm_load(Vmm *v, const char *path, char *err, size_t errlen)
{
    size_t room = v->mem_size - PROTO_LOAD_GPA;
    FILE *f = fopen(path, "rb");
    size_t n;
    int ret = 0;

    if (!f) {
        return fail(err, errlen, -errno, path);
    }
    n = fread(v->mem + PROTO_LOAD_GPA, 1, room, f);
    if (ferror(f) || n == 0) {
        ret = fail(err, errlen, -EIO, path);
    } else if (n == room && fgetc(f) != EOF) {
        ret = fail(err, errlen, -EFBIG, path);
    }
    fclose(f);
    return ret;
}

static int set_cpuid(Vmm *v, const VpmuKvm *k, char *err, size_t errlen)
{
    struct kvm_cpuid2 *c;
    int ret = 0;

    c = calloc(1, sizeof(*c) + CPUID_MAX_ENTRIES * sizeof(c->entries[0]));
    if (!c) {
        return -ENOMEM;
    }
    c->nent = CPUID_MAX_ENTRIES;
    if (ioctl(v->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) < 0) {
        ret = fail(err, errlen, -errno, "KVM_GET_SUPPORTED_CPUID");
        goto out;
    }
    for (size_t l = 0; l < sizeof(pmu_leaves) / sizeof(pmu_leaves[0]); l++) {
        uint32_t i;

        for (i = 0; i < c->nent && c->entries[i].function != pmu_leaves[l]; i++) {
        }
        if (i == c->nent) {
            if (c->nent == CPUID_MAX_ENTRIES) {
                ret = fail(err, errlen, -ENOSPC, "guest CPUID");
                goto out;
            }
            memset(&c->entries[i], 0, sizeof(c->entries[i]));
            c->entries[i].function = pmu_leaves[l];
            c->nent++;
        }
    }
    /* vpmu's answer for every PMU leaf, so KVM's vPMU is sized like ours. */
    for (uint32_t i = 0; i < c->nent; i++) {
        struct kvm_cpuid_entry2 *e = &c->entries[i];
        uint32_t regs[4] = { e->eax, e->ebx, e->ecx, e->edx };

        if (vpmu_kvm_cpuid(k, e->function, e->index, regs) == 0) {
            e->eax = regs[0];
            e->ebx = regs[1];
            e->ecx = regs[2];
            e->edx = regs[3];
        }
    }
    if (ioctl(v->vcpu_fd, KVM_SET_CPUID2, c) < 0) {
        ret = fail(err, errlen, -errno, "KVM_SET_CPUID2");
    }
out:
    free(c);
    return ret;
}

static void flat_segment(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
    memset(s, 0, sizeof(*s));
    s->base = 0;
    s->limit = 0xFFFFFFFF;
    s->selector = sel;
    s->type = type;
    s->present = 1;
    s->db = 1;
    s->s = 1;
    s->g = 1;
}

int vmm_setup(Vmm *v, const VpmuKvm *k, char *err, size_t errlen)
{
    uint64_t gdt[3] = { 0, GDT_CODE, GDT_DATA };
    struct kvm_sregs sregs;
    struct kvm_regs regs = { 0 };
    int ret = set_cpuid(v, k, err, errlen);

    if (ret < 0) {
        return ret;
    }
    memcpy(v->mem + PROTO_GDT_GPA, gdt, sizeof(gdt));
    if (ioctl(v->vcpu_fd, KVM_GET_SREGS, &sregs) < 0) {
        return fail(err, errlen, -errno, "KVM_GET_SREGS");
    }
    flat_segment(&sregs.cs, PROTO_SEL_CODE, 0xB);
    flat_segment(&sregs.ds, PROTO_SEL_DATA, 0x3);
    sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
    sregs.gdt.base = PROTO_GDT_GPA;
    sregs.gdt.limit = sizeof(gdt) - 1;
    sregs.cr0 = CR0_PE | CR0_ET;
    if (ioctl(v->vcpu_fd, KVM_SET_SREGS, &sregs) < 0) {
        return fail(err, errlen, -errno, "KVM_SET_SREGS");
    }
    regs.rip = PROTO_LOAD_GPA;
    regs.rsp = PROTO_STACK_GPA;
    regs.rflags = RFLAGS_FIXED;
    if (ioctl(v->vcpu_fd, KVM_SET_REGS, &regs) < 0) {
        return fail(err, errlen, -errno, "KVM_SET_REGS");
    }
    return 0;
}

void *vmm_guest_ptr(Vmm *v, uint64_t gpa, size_t len)
{
    if (gpa > v->mem_size || len > v->mem_size - gpa) {
        return NULL;
    }
    return v->mem + gpa;
}

void vmm_close(Vmm *v)
{
    if (v->run) {
        munmap(v->run, v->run_size);
    }
    if (v->mem) {
        munmap(v->mem, v->mem_size);
    }
    if (v->vcpu_fd >= 0) {
        close(v->vcpu_fd);
    }
    if (v->vm_fd >= 0) {
        close(v->vm_fd);
    }
    if (v->kvm_fd >= 0) {
        close(v->kvm_fd);
    }
    memset(v, 0, sizeof(*v));
    v->kvm_fd = v->vm_fd = v->vcpu_fd = -1;
}
