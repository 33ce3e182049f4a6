/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu profiles: where a guest spends its time, sampled from the host
 * without the guest's help (docs/operators.md, "Profiles").
 *
 * The VMM takes the samples (on a vCPU thread, at its own sampling point)
 * and hands each to a VpmuProfile with the guest's registers and a way to
 * read guest memory; the profile walks the guest's frame pointers
 * (read-only, bounded) and keeps the stack.  At the end it writes pprof
 * (gzipped protobuf: go tool pprof, Parca, Pyroscope) or perf.data
 * (perf report, perf script), with kernel frames named from a System.map
 * or kallsyms (at the KASLR slide of the guest's kernel) and user frames
 * from ELF files the operator gives.
 */
#ifndef VPMU_PROFILE_H
#define VPMU_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tenant's policy for operator profiles (operator-profile=). */
typedef enum VpmuProfileMode {
    VPMU_PROFILE_DENY,          /* no profile */
    VPMU_PROFILE_IP,            /* the instruction pointer only */
    VPMU_PROFILE_STACK,         /* with call chains */
} VpmuProfileMode;

/* "deny", "ip", "stack"; -EINVAL for anything else (@mode unchanged). */
VPMU_API int vpmu_profile_mode_parse(const char *text, VpmuProfileMode *mode);
VPMU_API const char *vpmu_profile_mode_name(VpmuProfileMode mode);

/* Deepest call chain kept, the sampled frame included. */
#define VPMU_PROFILE_MAX_DEPTH 64

/*
 * Reads @len bytes of guest virtual memory at @vaddr through the guest's
 * page tables as the vCPU would at its current privilege, without side
 * effects (no accessed bits, no faults).  Return: 0, or -EFAULT.
 */
typedef int (*VpmuGuestRead)(void *opaque, uint64_t vaddr, void *buf,
                             size_t len);

typedef struct VpmuProfileRegs {
    uint64_t ip;                /* RIP */
    uint64_t fp;                /* RBP */
    bool user;                  /* CPL 3 */
    uint64_t sp;                /* RSP: where a kernel sample's task entered
                                   (vpmu_profile_entry_regs()) */
    bool la57;                  /* CR4.LA57: 5-level paging, whose halves
                                   of the address space are wider */
} VpmuProfileRegs;

/**
 * vpmu_profile_unwind() - the call chain of @regs from frame pointers.
 * @pcs: receives @regs->ip, then each return address, innermost first;
 *       @max its room (at most VPMU_PROFILE_MAX_DEPTH are used).
 *
 * A frame is [fp] = the caller's fp, [fp + 8] = the return address.  The
 * walk stops at the first frame that cannot be one: fp not 8-aligned, not
 * above the previous one or more than a stack's size above it, outside
 * the sampled mode's half of the address space (@regs->la57 says how
 * wide); a return address outside
 * it or zero; a read that fails.  So a bad pointer ends the chain; at most
 * @max - 1 reads are made.
 *
 * Return: the number of addresses in @pcs (>= 1 when @max >= 1).
 */
VPMU_API unsigned vpmu_profile_unwind(const VpmuProfileRegs *regs,
                                      VpmuGuestRead read, void *opaque,
                                      uint64_t *pcs, unsigned max);

/**
 * vpmu_profile_entry_regs() - the user registers with which a kernel
 * sample's task entered the kernel: Linux's struct pt_regs at the top of
 * the 16 KiB task stack that @regs->sp lies in (task_pt_regs(), x86-64:
 * no padding above it), as perf's user part of a kernel sample starts.
 * @user: receives RIP, RBP and RSP from it, user = true.
 *
 * Return: 0; -ENOENT for a user sample, or if what lies there is not a
 * user entry's frame: CS or SS not at RPL 3, RFLAGS without its fixed
 * bit 1, RIP or RSP outside the user half (a kernel thread, an IRQ
 * stack, another kernel's stack size); -EFAULT from @read.
 */
VPMU_API int vpmu_profile_entry_regs(const VpmuProfileRegs *regs,
                                     VpmuGuestRead read, void *opaque,
                                     VpmuProfileRegs *user);

/* --- Symbols ----------------------------------------------------------- */

typedef struct VpmuSymbols VpmuSymbols;

/**
 * vpmu_symbols_load_map() - a System.map or kallsyms ("ADDR TYPE NAME
 * [MODULE]" lines) into @out; text symbols (t, T, w, W) are kept.
 * Return: 0; -errno of the open or read; -EINVAL for a malformed line or
 * a file without text symbols, with @err saying which line.
 */
VPMU_API int vpmu_symbols_load_map(const char *path, VpmuSymbols **out,
                                   char *err, size_t errlen);

/**
 * vpmu_symbols_load_elf() - the function symbols (STT_FUNC, .symtab and
 * .dynsym) of an x86-64 ELF file into @out.
 * Return: 0; -errno of the open or read; -EINVAL for a file that is not a
 * 64-bit little-endian ELF, a truncated or inconsistent one, or one
 * without function symbols, with @err saying why.
 */
VPMU_API int vpmu_symbols_load_elf(const char *path, VpmuSymbols **out,
                                   char *err, size_t errlen);

VPMU_API void vpmu_symbols_free(VpmuSymbols *syms);

/* An ELF's executable PT_LOAD segment, at its link-time address. */
typedef struct VpmuSymbolsSegment {
    uint64_t vaddr, memsz, offset;
} VpmuSymbolsSegment;
#define VPMU_SYMBOLS_MAX_SEGMENTS 4

/**
 * vpmu_symbols_segments() - an ELF's executable segments into *@segs
 * (*@n of them).  Return: its absolute path; NULL for a System.map.
 */
VPMU_API const char *vpmu_symbols_segments(const VpmuSymbols *syms,
                                           const VpmuSymbolsSegment **segs,
                                           unsigned *n);

/**
 * vpmu_symbols_slide() - the KASLR slide of a kernel: @runtime is where
 * the guest has symbol @name (entry_SYSCALL_64 is IA32_LSTAR's value).
 * Return: 0 with *@slide = @runtime - its address in @syms; -ENOENT
 * without @name; -EINVAL if the slide is not a multiple of 2 MiB (x86-64
 * KASLR moves the kernel in CONFIG_PHYSICAL_ALIGN steps): the map is not
 * the guest's kernel's.
 */
VPMU_API int vpmu_symbols_slide(const VpmuSymbols *syms, const char *name,
                                uint64_t runtime, int64_t *slide);

/**
 * vpmu_symbols_lookup() - the function at @addr (in @syms' addresses).
 * Return: its name, or NULL outside every symbol.
 */
VPMU_API const char *vpmu_symbols_lookup(const VpmuSymbols *syms,
                                         uint64_t addr);

/* --- Profiles ---------------------------------------------------------- */

typedef struct VpmuProfileOpts {
    const char *vm;             /* the "vm" label */
    unsigned nr_vcpus;
    const char *event;          /* what a sample's period counts */
    const char *unit;           /* "count", or "nanoseconds" for a clock */
    VpmuProfileMode mode;       /* VPMU_PROFILE_IP or _STACK */
    /* Samples kept per vCPU (0: 1 << 20); more are counted as lost. */
    unsigned max_samples;
} VpmuProfileOpts;

typedef struct VpmuProfile VpmuProfile;

/* Return: 0; -EINVAL for no vCPU, no event, mode deny; -ENOMEM. */
VPMU_API int vpmu_profile_new(const VpmuProfileOpts *opts, VpmuProfile **out);
VPMU_API void vpmu_profile_free(VpmuProfile *prof);

/**
 * vpmu_profile_add_symbols() - name frames from @syms: kernel ones
 * (@kernel, at @slide) or user ones (an ELF loaded at @slide from its
 * link-time addresses; 0 for a non-PIE executable).  The profile owns
 * @syms from here, also on error.  Return: 0, or -EINVAL.
 */
VPMU_API int vpmu_profile_add_symbols(VpmuProfile *prof, VpmuSymbols *syms,
                                      bool kernel, int64_t slide);

/**
 * vpmu_profile_sample() - one sample of vCPU @vcpu: @regs, walked with
 * @read when the mode is VPMU_PROFILE_STACK; @time_ns on the caller's
 * clock; @period what it stands for (events, or nanoseconds).
 * One thread at a time per vCPU; different vCPUs may sample at once.
 * Return: 0; -EINVAL for a vCPU out of range; -ENOSPC past max_samples
 * (counted as lost, nothing else changes).
 */
VPMU_API int vpmu_profile_sample(VpmuProfile *prof, unsigned vcpu,
                                 const VpmuProfileRegs *regs,
                                 uint64_t time_ns, uint64_t period,
                                 VpmuGuestRead read, void *opaque);

typedef struct VpmuProfileStats {
    uint64_t samples;           /* kept */
    uint64_t lost;              /* past max_samples */
    uint64_t frames;            /* addresses in the kept call chains */
} VpmuProfileStats;

VPMU_API void vpmu_profile_stats(const VpmuProfile *prof,
                                 VpmuProfileStats *stats);

/**
 * vpmu_profile_write_pprof() - the samples as a gzipped pprof profile at
 * @path: sample types "samples"/"count" and @event/@unit; each sample
 * labelled vm, vcpu and mode ("kernel" or "user"); one location per
 * address, named when a symbol table covers it.  @start_ns and
 * @duration_ns are the profile's time.  After every sample call.
 * Return: 0, or -errno (the file is removed on error).
 */
VPMU_API int vpmu_profile_write_pprof(const VpmuProfile *prof,
                                      const char *path, uint64_t start_ns,
                                      uint64_t duration_ns);

/**
 * vpmu_profile_write_perf() - the samples as perf.data at @path: one
 * PERF_RECORD_SAMPLE each, marked PERF_RECORD_MISC_GUEST_KERNEL or
 * _GUEST_USER, pid and tid @pid (the VMM's), cpu the vCPU index; a
 * PERF_RECORD_COMM with the vm label, a PERF_RECORD_MMAP for the guest
 * kernel (what perf's --guestkallsyms names) and for each ELF's
 * executable segments.  Call chains carry PERF_CONTEXT_KERNEL / _USER:
 * Debian's perf 6.1 drops a chain with PERF_CONTEXT_GUEST_* markers.
 * Return: 0, or -errno (the file is removed on error).
 */
VPMU_API int vpmu_profile_write_perf(const VpmuProfile *prof,
                                     const char *path, uint32_t pid);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_PROFILE_H */
