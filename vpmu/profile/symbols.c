/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Symbol tables for profiles: a kernel's System.map or kallsyms, and the
 * function symbols of ELF files.  Both are what the operator gives; both
 * are checked as untrusted input (a clear error, nothing half-loaded).
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <vpmu/profile.h>

#include "profile-priv.h"

/* x86-64 KASLR slides the kernel in CONFIG_PHYSICAL_ALIGN steps. */
#define KASLR_ALIGN (2ull << 20)

typedef struct Sym {
    uint64_t addr;
    uint64_t size;              /* 0: up to the next symbol */
    char *name;
} Sym;

struct VpmuSymbols {
    Sym *syms;
    size_t n, cap;
    char *path;                 /* an ELF's, for perf.data's mmaps */
    VpmuSymbolsSegment segs[VPMU_SYMBOLS_MAX_SEGMENTS];
    unsigned nsegs;
};

static int add(VpmuSymbols *s, uint64_t addr, uint64_t size, const char *name,
               size_t len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        Sym *m = realloc(s->syms, cap * sizeof(*m));

        if (!m) {
            return -ENOMEM;
        }
        s->syms = m;
        s->cap = cap;
    }
    s->syms[s->n].name = strndup(name, len);
    if (!s->syms[s->n].name) {
        return -ENOMEM;
    }
    s->syms[s->n].addr = addr;
    s->syms[s->n++].size = size;
    return 0;
}

void vpmu_symbols_free(VpmuSymbols *s)
{
    if (!s) {
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        free(s->syms[i].name);
    }
    free(s->syms);
    free(s->path);
    free(s);
}

const char *vpmu_symbols_segments(const VpmuSymbols *s,
                                  const VpmuSymbolsSegment **segs,
                                  unsigned *n)
{
    *segs = s->segs;
    *n = s->nsegs;
    return s->path;
}

static int cmp_sym(const void *a, const void *b)
{
    const Sym *x = a, *y = b;

    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sort; -EINVAL without symbols. */
static int finish(VpmuSymbols *s, char *err, size_t errlen, const char *path)
{
    if (s->n == 0) {
        snprintf(err, errlen, "%s: no function symbols", path);
        return -EINVAL;
    }
    qsort(s->syms, s->n, sizeof(*s->syms), cmp_sym);
    return 0;
}

/* One "ADDR TYPE NAME [MODULE]" line; 1 if kept, 0 if not text, -errno. */
static int map_line(VpmuSymbols *s, const char *line)
{
    char *end;
    uint64_t addr;
    const char *name;
    size_t len;

    errno = 0;
    addr = strtoull(line, &end, 16);
    if (errno || end == line || *end != ' ' || !end[1] || end[2] != ' ') {
        return -EINVAL;
    }
    name = end + 3;
    len = strcspn(name, " \t\n");
    if (len == 0) {
        return -EINVAL;
    }
    if (!strchr("tTwW", end[1])) {
        return 0;
    }
    int rc = add(s, addr, 0, name, len);

    return rc < 0 ? rc : 1;
}

int vpmu_symbols_load_map(const char *path, VpmuSymbols **out, char *err,
                          size_t errlen)
{
    VpmuSymbols *s = calloc(1, sizeof(*s));
    FILE *f = fopen(path, "r");
    char line[512];
    unsigned lineno = 0;
    int rc = 0;

    if (!s || !f) {
        rc = s ? -errno : -ENOMEM;
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        goto out;
    }
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = -EINVAL;
        } else {
            rc = map_line(s, line);
        }
        if (rc < 0) {
            snprintf(err, errlen, "%s:%u: not \"ADDRESS TYPE NAME\"%s", path,
                     lineno, rc == -ENOMEM ? " (out of memory)" : "");
            goto out;
        }
    }
    rc = ferror(f) ? -EIO : finish(s, err, errlen, path);
    if (rc == -EIO) {
        snprintf(err, errlen, "%s: read error", path);
    }
out:
    if (f) {
        fclose(f);
    }
    if (rc < 0) {
        vpmu_symbols_free(s);
        s = NULL;
    }
    *out = s;
    return rc < 0 ? rc : 0;
}

const char *vpmu_symbols_lookup(const VpmuSymbols *s, uint64_t addr)
{
    size_t lo = 0, hi = s->n;

    /* The last symbol at or below @addr. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->syms[mid].addr <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == 0) {
        return NULL;
    }
    /* Sized (ELF) symbols end at their size; several may share an addr. */
    for (size_t i = lo; i-- > 0 && s->syms[i].addr == s->syms[lo - 1].addr;) {
        const Sym *y = &s->syms[i];

        if (!y->size || addr - y->addr < y->size) {
            return y->name;
        }
    }
    return NULL;
}

int vpmu_symbols_slide(const VpmuSymbols *s, const char *name,
                       uint64_t runtime, int64_t *slide)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!strcmp(s->syms[i].name, name)) {
            uint64_t d = runtime - s->syms[i].addr;

            if (d % KASLR_ALIGN) {
                return -EINVAL;
            }
            *slide = (int64_t)d;
            return 0;
        }
    }
    return -ENOENT;
}

/* --- ELF ------------------------------------------------------------------ */

/* The bytes [off, off + len) of the file, or NULL if they are not in it. */
static const void *in_file(const uint8_t *img, size_t size, uint64_t off,
                           uint64_t len)
{
    return off <= size && len <= size - off ? img + off : NULL;
}

static int elf_symtab(VpmuSymbols *s, const uint8_t *img, size_t size,
                      const Elf64_Shdr *sh, const Elf64_Shdr *strsh)
{
    const Elf64_Sym *sym = in_file(img, size, sh->sh_offset, sh->sh_size);
    const char *str = in_file(img, size, strsh->sh_offset, strsh->sh_size);

    if (!sym || !str || sh->sh_entsize != sizeof(*sym) ||
        strsh->sh_size == 0 || str[strsh->sh_size - 1] != '\0') {
        return -EINVAL;
    }
    for (size_t i = 0; i < sh->sh_size / sizeof(*sym); i++) {
        const Elf64_Sym *y = &sym[i];
        int rc;

        if (ELF64_ST_TYPE(y->st_info) != STT_FUNC ||
            y->st_shndx == SHN_UNDEF || y->st_name >= strsh->sh_size) {
            continue;
        }
        rc = add(s, y->st_value, y->st_size ? y->st_size : 1,
                 str + y->st_name, strlen(str + y->st_name));
        if (rc) {
            return rc;
        }
    }
    return 0;
}

/* The executable PT_LOAD segments, as the kernel's mmaps would be. */
static int elf_segments(VpmuSymbols *s, const uint8_t *img, size_t size,
                        const Elf64_Ehdr *eh)
{
    const Elf64_Phdr *ph = in_file(img, size, eh->e_phoff,
                                   (uint64_t)eh->e_phnum * sizeof(*ph));

    if (!ph || (eh->e_phnum && eh->e_phentsize != sizeof(*ph))) {
        return -EINVAL;
    }
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X) ||
            s->nsegs == VPMU_SYMBOLS_MAX_SEGMENTS) {
            continue;
        }
        s->segs[s->nsegs++] = (VpmuSymbolsSegment){
            ph[i].p_vaddr, ph[i].p_memsz, ph[i].p_offset,
        };
    }
    return 0;
}

static int elf_parse(VpmuSymbols *s, const uint8_t *img, size_t size,
                     const char **why)
{
    const Elf64_Ehdr *eh = in_file(img, size, 0, sizeof(Elf64_Ehdr));
    const Elf64_Shdr *sh;

    if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64) {
        *why = "not a 64-bit x86-64 ELF file";
        return -EINVAL;
    }
    sh = in_file(img, size, eh->e_shoff,
                 (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr));
    if (!sh || eh->e_shentsize != sizeof(Elf64_Shdr)) {
        *why = "section headers outside the file";
        return -EINVAL;
    }
    if (elf_segments(s, img, size, eh)) {
        *why = "program headers outside the file";
        return -EINVAL;
    }
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        int rc;

        if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) {
            continue;
        }
        if (sh[i].sh_link >= eh->e_shnum) {
            *why = "a symbol table's string table is missing";
            return -EINVAL;
        }
        rc = elf_symtab(s, img, size, &sh[i], &sh[sh[i].sh_link]);
        if (rc) {
            *why = rc == -ENOMEM ? "out of memory"
                                 : "a symbol table outside the file";
            return rc;
        }
    }
    return 0;
}

int vpmu_symbols_load_elf(const char *path, VpmuSymbols **out, char *err,
                          size_t errlen)
{
    VpmuSymbols *s = calloc(1, sizeof(*s));
    const char *why = NULL;
    uint8_t *img = NULL;
    size_t size = 0;
    int rc;

    rc = s ? vpmu_profile_read_file(path, &img, &size) : -ENOMEM;
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        goto out;
    }
    rc = elf_parse(s, img, size, &why);
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, why);
        goto out;
    }
    s->path = realpath(path, NULL);
    if (!s->path) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        goto out;
    }
    rc = finish(s, err, errlen, path);
out:
    free(img);
    if (rc) {
        vpmu_symbols_free(s);
        s = NULL;
    }
    *out = s;
    return rc;
}
