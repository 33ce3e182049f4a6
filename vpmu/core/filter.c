/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu event filter, with the semantics of KVM_SET_PMU_EVENT_FILTER and
 * KVM_PMU_EVENT_FLAG_MASKED_EVENTS (Documentation/virt/kvm/api.rst; the
 * code is arch/x86/kvm/pmu.c).
 *
 * Every entry is stored in the masked encoding: plain "event E, umask U"
 * becomes "E, mask 0xff, match U", which hits exactly the same events;
 * KVM converts plain filters the same way since masked events (6.3).  One
 * array and one matching rule serve both kinds; the flags only pick the
 * layout add() accepts.
 *
 * The array is sorted by (exclude, event select, mask, match), so includes
 * come first, then excludes, each ordered by event select, like KVM's
 * split of its sorted list.  Lookups bsearch() it: exactly for plain
 * filters; for masked ones by event select, then over the entries sharing
 * it (KVM: find_filter_index() and is_filter_entry_match()).  The filter
 * is consulted when a counter is reprogrammed, not per guest instruction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmu-priv.h"

/*
 * The guest EVTSEL and the masked encoding share field positions: event
 * select [7:0], AMD event select [11:8] at [35:32], unit mask (or match)
 * [15:8].  The masked encoding adds exclude (55) and mask [63:56].
 */
#define EVENT_SELECT_LO         0x0ffull    /* event select [7:0] ... */
#define EVENT_SELECT_HI         0xf00ull    /* ... and [11:8] ... */
#define EVENT_SELECT_HI_SHIFT   24          /* ... which sit at [35:32] */
#define UMASK_SHIFT             8           /* unit mask / match [15:8] */
#define UMASK_MASK_SHIFT        56          /* masked entry mask [63:56] */
#define FIXED_BITMAP_BITS       32          /* fixed_counter_bitmap is a u32 */

/* Bits a masked entry may carry (KVM: filter_masked_events_are_valid()). */
#define MASKED_ENTRY_VALID \
    (VPMU_MASKED_EVENT_SELECT | VPMU_MASKED_UMASK_MATCH | \
     VPMU_MASKED_EXCLUDE | VPMU_MASKED_UMASK_MASK)

#define UMASK_OF(v) ((unsigned)(((v) & VPMU_MASKED_UMASK_MATCH) >> UMASK_SHIFT))
#define MASK_OF(e)  ((unsigned)((e) >> UMASK_MASK_SHIFT))  /* [63:56] */

/* Parser limits: EVENT:MASK:MATCH:exclude at most, 12-bit events. */
#define ENTRY_MAX_FIELDS    4
#define EVENT_MAX           0xfffull
#define UMASK_MAX           0xffull

#define STRINGIFY_(x)       #x
#define STRINGIFY(x)        STRINGIFY_(x)

struct VpmuFilter {
    VpmuFilterAction action;
    unsigned flags;             /* 0 or VPMU_FILTER_MASKED */
    uint32_t fixed_bitmap;
    size_t nr_entries;
    size_t nr_includes;         /* entries[0, nr_includes) have no EXCLUDE */
    uint64_t entries[VPMU_FILTER_MAX_EVENTS];   /* masked encoding, sorted */
};

/* The 12-bit event select of an EVTSEL value or a masked entry. */
static uint64_t event_select(uint64_t v)
{
    return (v & EVENT_SELECT_LO) |
           ((v >> EVENT_SELECT_HI_SHIFT) & EVENT_SELECT_HI);
}

/*
 * Sort key: exclude, event select, mask, match.  It keeps every bit a
 * valid entry may have, so equal keys mean equal entries.
 */
static uint64_t entry_key(uint64_t e)
{
    return ((e & VPMU_MASKED_EXCLUDE) ? 1ull << 36 : 0) |
           (event_select(e) << 16) | ((uint64_t)MASK_OF(e) << 8) | UMASK_OF(e);
}

/* Plain "event E, umask U" as masked "E, mask 0xff, match U". */
static uint64_t plain_to_masked(uint64_t plain)
{
    return (plain & VPMU_FILTER_EVENT_MASK) | VPMU_MASKED_UMASK_MASK;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* qsort(): two entries. */
static int cmp_entries(const void *a, const void *b)
{
    return cmp_u64(entry_key(*(const uint64_t *)a),
                   entry_key(*(const uint64_t *)b));
}

/* bsearch(): @k is an entry_key(). */
static int cmp_key(const void *k, const void *elem)
{
    return cmp_u64(*(const uint64_t *)k, entry_key(*(const uint64_t *)elem));
}

/* bsearch(): @k is an event select. */
static int cmp_event_select(const void *k, const void *elem)
{
    return cmp_u64(*(const uint64_t *)k, event_select(*(const uint64_t *)elem));
}

/*
 * Does a masked entry in the sorted base[0, n) hit @eventsel?  Entries of
 * one event select but different masks share no single key, so bsearch()
 * lands somewhere in their run and we try the whole run (KVM does too).
 */
static bool masked_list_hits(const uint64_t *base, size_t n, uint64_t eventsel)
{
    uint64_t sel = event_select(eventsel);
    unsigned umask = UMASK_OF(eventsel);
    const uint64_t *hit;
    size_t i;

    hit = bsearch(&sel, base, n, sizeof(*base), cmp_event_select);
    if (!hit) {
        return false;
    }
    for (i = (size_t)(hit - base); i > 0 && event_select(base[i - 1]) == sel;) {
        i--;
    }
    for (; i < n && event_select(base[i]) == sel; i++) {
        /* KVM: is_filter_entry_match(): (umask & mask) == match */
        if ((umask & MASK_OF(base[i])) == UMASK_OF(base[i])) {
            return true;
        }
    }
    return false;
}

/* Plain entries all have mask 0xff, so one exact bsearch() decides. */
static bool plain_list_hits(const uint64_t *base, size_t n, uint64_t eventsel)
{
    uint64_t key = entry_key(plain_to_masked(eventsel));

    return bsearch(&key, base, n, sizeof(*base), cmp_key) != NULL;
}

int vpmu_filter_new(VpmuFilterAction action, unsigned flags, VpmuFilter **out)
{
    VpmuFilter *f;

    /* KVM_SET_PMU_EVENT_FILTER: an unknown action or flag is -EINVAL. */
    if (!out || (action != VPMU_FILTER_ALLOW && action != VPMU_FILTER_DENY) ||
        (flags & ~VPMU_FILTER_MASKED)) {
        return -EINVAL;
    }
    f = calloc(1, sizeof(*f));
    if (!f) {
        return -ENOMEM;
    }
    f->action = action;
    f->flags = flags;
    *out = f;
    return 0;
}

void vpmu_filter_free(VpmuFilter *f)
{
    free(f);
}

/*
 * A deep copy, for vpmu_pmu_set_filter().  Cloning "no filter" (NULL)
 * gives "no filter", so callers need no special case.
 */
int vpmu_filter_clone(const VpmuFilter *f, VpmuFilter **out)
{
    VpmuFilter *copy = NULL;

    if (!out) {
        return -EINVAL;
    }
    if (f) {
        copy = malloc(sizeof(*copy));
        if (!copy) {
            return -ENOMEM;
        }
        memcpy(copy, f, sizeof(*copy));
    }
    *out = copy;
    return 0;
}

/*
 * KVM silently drops plain entries with stray bits (remove_invalid_raw_
 * events()); we reject them, so an operator's typo cannot quietly change
 * the policy.  Stray bits in masked entries are -EINVAL in KVM too.  The
 * entry is validated before the capacity check; duplicates are kept and
 * count against the limit, as they do in KVM's nevents.
 */
int vpmu_filter_add(VpmuFilter *f, uint64_t entry)
{
    if (!f) {
        return -EINVAL;
    }
    if (f->flags & VPMU_FILTER_MASKED) {
        if (entry & ~MASKED_ENTRY_VALID) {
            return -EINVAL;
        }
    } else {
        if (entry & ~VPMU_FILTER_EVENT_MASK) {
            return -EINVAL;
        }
        entry = plain_to_masked(entry);
    }
    if (f->nr_entries >= VPMU_FILTER_MAX_EVENTS) {
        return -E2BIG;
    }
    /* At most 300 entries, added rarely: append and re-sort. */
    f->entries[f->nr_entries++] = entry;
    qsort(f->entries, f->nr_entries, sizeof(f->entries[0]), cmp_entries);
    if (!(entry & VPMU_MASKED_EXCLUDE)) {
        f->nr_includes++;
    }
    return 0;
}

void vpmu_filter_set_fixed_bitmap(VpmuFilter *f, uint32_t bitmap)
{
    if (f) {
        f->fixed_bitmap = bitmap;
    }
}

/*
 * KVM: is_gp_event_allowed().  A NULL filter means none is installed, and
 * without a filter every event is allowed, as in KVM.
 */
bool vpmu_filter_allows_event(const VpmuFilter *f, uint64_t eventsel)
{
    size_t n_inc;
    bool included;

    if (!f) {
        return true;
    }
    n_inc = f->nr_includes;
    if (f->flags & VPMU_FILTER_MASKED) {
        /* Included: hits an include entry and no exclude entry. */
        included = masked_list_hits(f->entries, n_inc, eventsel) &&
                   !masked_list_hits(f->entries + n_inc,
                                     f->nr_entries - n_inc, eventsel);
    } else {
        included = plain_list_hits(f->entries, n_inc, eventsel);
    }
    return included ? f->action == VPMU_FILTER_ALLOW
                    : f->action == VPMU_FILTER_DENY;
}

/*
 * KVM: is_fixed_event_allowed().  The bitmap has 32 bits; counters from 32
 * up read a 0 bit.  A NULL filter allows everything.
 */
bool vpmu_filter_allows_fixed(const VpmuFilter *f, unsigned idx)
{
    bool bit;

    if (!f) {
        return true;
    }
    bit = idx < FIXED_BITMAP_BITS && ((f->fixed_bitmap >> idx) & 1u);
    return f->action == VPMU_FILTER_ALLOW ? bit : !bit;
}

/* ---- vpmu_filter_parse() ---- */

#define SEPARATORS      ", \t\r\n"
#define FIXED_PREFIX    "fixed="

typedef struct FilterParse {
    VpmuFilter *f;
    bool fixed_seen;
    char *err;
    size_t errlen;
} FilterParse;

/* Next item after any run of separators; NULL at the end of the text. */
static const char *next_token(const char **pos, size_t *len)
{
    const char *start = *pos + strspn(*pos, SEPARATORS);

    *len = strcspn(start, SEPARATORS);
    *pos = start + *len;
    return *len ? start : NULL;
}

/* ASCII only, so the locale cannot change what the grammar accepts. */
static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive compare of @s[0, len) with the lower-case @word. */
static bool word_eq(const char *s, size_t len, const char *word)
{
    if (strlen(word) != len) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (ascii_lower(s[i]) != word[i]) {
            return false;
        }
    }
    return true;
}

/* "0x" hex (any case) or decimal; no sign, no octal; at most @max. */
static bool parse_num(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    static const char digits[] = "0123456789abcdef";
    unsigned base = 10;
    uint64_t v = 0;
    size_t i = 0;

    if (len > 2 && s[0] == '0' && ascii_lower(s[1]) == 'x') {
        base = 16;
        i = 2;
    }
    if (i == len) {
        return false;
    }
    for (; i < len; i++) {
        const char *d = memchr(digits, ascii_lower(s[i]), base);

        if (!d) {
            return false;
        }
        /* v <= max <= UINT32_MAX before this step, so it cannot wrap. */
        v = v * base + (uint64_t)(d - digits);
        if (v > max) {
            return false;
        }
    }
    *out = v;
    return true;
}

/* Split @tok on ':'; returns the field count, ENTRY_MAX_FIELDS + 1 if more. */
static size_t split_fields(const char *tok, size_t len,
                           const char *fld[], size_t flen[])
{
    const char *end = tok + len;
    size_t n = 0;

    for (;;) {
        const char *colon = memchr(tok, ':', (size_t)(end - tok));

        if (n == ENTRY_MAX_FIELDS) {
            return n + 1;
        }
        fld[n] = tok;
        flen[n++] = (size_t)((colon ? colon : end) - tok);
        if (!colon) {
            return n;
        }
        tok = colon + 1;
    }
}

/* Plain "EVENT[:UMASK]" or masked "EVENT:MASK:MATCH[:exclude]". */
static int parse_entry(FilterParse *ps, const char *tok, size_t len)
{
    bool masked = ps->f->flags & VPMU_FILTER_MASKED;
    const char *fld[ENTRY_MAX_FIELDS];
    size_t flen[ENTRY_MAX_FIELDS];
    size_t n = split_fields(tok, len, fld, flen);
    uint64_t val[3] = { 0 }, entry;     /* event, then umask or mask, match */
    bool ok;
    int ret;

    ok = masked ? n == 3 || (n == 4 && word_eq(fld[3], flen[3], "exclude"))
                : n == 1 || n == 2;
    for (size_t i = 0; ok && i < n && i < 3; i++) {
        ok = parse_num(fld[i], flen[i], i ? UMASK_MAX : EVENT_MAX, &val[i]);
    }
    if (!ok) {
        return vpmu_err(ps->err, ps->errlen, "bad filter entry '%.*s' "
                        "(expected %s)", (int)len, tok,
                        masked ? "EVENT:MASK:MATCH[:exclude]"
                               : "EVENT[:UMASK]");
    }
    if (masked) {
        entry = VPMU_ENCODE_MASKED_ENTRY(val[0], val[1], val[2], n == 4);
    } else {
        /* The plain layout is the guest EVTSEL's: event [11:8] at [35:32]. */
        entry = (val[0] & EVENT_SELECT_LO) |
                ((val[0] & EVENT_SELECT_HI) << EVENT_SELECT_HI_SHIFT) |
                (val[1] << UMASK_SHIFT);
    }
    ret = vpmu_filter_add(ps->f, entry);
    if (ret < 0) {
        return vpmu_errorf(ps->err, ps->errlen, ret, "cannot add filter "
                           "entry '%.*s'%s", (int)len, tok,
                           ret == -E2BIG ? " (more than "
                           STRINGIFY(VPMU_FILTER_MAX_EVENTS) " entries)" : "");
    }
    return 0;
}

static int parse_item(FilterParse *ps, const char *tok, size_t len)
{
    const size_t plen = strlen(FIXED_PREFIX);
    uint64_t bitmap;

    if (word_eq(tok, len, "masked")) {
        /* Like KVM's flags, the entry layout is chosen before any entry. */
        if ((ps->f->flags & VPMU_FILTER_MASKED) || ps->f->nr_entries > 0) {
            return vpmu_err(ps->err, ps->errlen, "'%.*s' must come once, "
                            "before any entry", (int)len, tok);
        }
        ps->f->flags |= VPMU_FILTER_MASKED;
        return 0;
    }
    if (len < plen || !word_eq(tok, plen, FIXED_PREFIX)) {
        return parse_entry(ps, tok, len);
    }
    if (ps->fixed_seen ||
        !parse_num(tok + plen, len - plen, UINT32_MAX, &bitmap)) {
        return vpmu_err(ps->err, ps->errlen, "%s '%.*s' (expected one "
                        "fixed=N, N <= 0xffffffff)",
                        ps->fixed_seen ? "repeated" : "bad", (int)len, tok);
    }
    ps->fixed_seen = true;
    vpmu_filter_set_fixed_bitmap(ps->f, (uint32_t)bitmap);
    return 0;
}

/*
 * Items may be separated by any run of commas and white space, so
 * "0x2e:0x4f, 0x2e:0x41" reads naturally.  Keywords and hex digits are
 * case-insensitive.  *@out is written only on success.
 */
int vpmu_filter_parse(const char *text, VpmuFilter **out,
                      char *err, size_t errlen)
{
    FilterParse ps = { .err = err, .errlen = errlen };
    const char *pos = text, *tok;
    VpmuFilterAction action;
    size_t len;
    int ret;

    if (!text || !out) {
        return vpmu_err(err, errlen, "no filter text or result pointer");
    }
    tok = next_token(&pos, &len);
    if (tok && word_eq(tok, len, "allow")) {
        action = VPMU_FILTER_ALLOW;
    } else if (tok && word_eq(tok, len, "deny")) {
        action = VPMU_FILTER_DENY;
    } else {
        return vpmu_err(err, errlen, "bad filter action '%.*s' (expected "
                        "allow or deny)", tok ? (int)len : 0, tok ? tok : "");
    }
    ret = vpmu_filter_new(action, 0, &ps.f);
    if (ret < 0) {
        return vpmu_errorf(err, errlen, ret, "cannot allocate a filter");
    }
    while ((tok = next_token(&pos, &len)) != NULL) {
        ret = parse_item(&ps, tok, len);
        if (ret < 0) {
            goto err;
        }
    }
    *out = ps.f;
    return 0;

err:
    vpmu_filter_free(ps.f);
    return ret;
}
