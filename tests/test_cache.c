/* test_cache.c — the on-disk kernel cache: round trip, misses and explain, damaged entries,
 * LRU eviction, concurrent processes, unwritable folders, a put failing part-way, the commands. */
#include "testutil.h"
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* A key like the compiler's: ir hash, back end, target, toolchain, options, format. */
static void make_key(cache_key *k, const char *ir, const char *precision)
{
    memset(k, 0, sizeof *k);
    cache_key_add(k, "ir", ir);
    cache_key_add(k, "backend", "cpu");
    cache_key_add(k, "target", "x86_64-pc-linux-gnu znver3 +avx2,+fma");
    cache_key_add(k, "llvm", "14.0.6");
    cache_key_add(k, "precision", precision);
    cache_key_add(k, "fast_math", "0");
    cache_key_add(k, "format", "1");
}

/* Deterministic bytes for a seed string. */
static unsigned char *pattern(const char *seed, size_t len)
{
    unsigned char *p = malloc(len ? len : 1);
    uint64_t x = XXH3_64bits(seed, strlen(seed)) | 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        p[i] = (unsigned char)x;
    }
    return p;
}

static void expect_hit(cache *c, const cache_key *k, const void *data, size_t len)
{
    void *got = NULL;
    size_t n = 0;
    assert_int_equal(cache_get(c, k, &got, &n), 1);
    assert_int_equal(n, len);
    assert_memory_equal(got, data, len);
    free(got);
}

static void expect_miss(cache *c, const cache_key *k)
{
    void *got = (void *)1;
    size_t n = 7;
    assert_int_equal(cache_get(c, k, &got, &n), 0);
    assert_ptr_equal(got, (void *)1); /* untouched on a miss */
}

/* Path of the entry file `ext` of key (id computed here, from the documented scheme). */
static void entry_file(const char *dir, const char *canonical, const char *ext, char *out)
{
    XXH128_canonical_t cn;
    XXH128_canonicalFromHash(&cn, XXH3_128bits(canonical, strlen(canonical)));
    char id[33];
    for (int i = 0; i < 16; i++) sprintf(id + 2 * i, "%02x", cn.digest[i]);
    sprintf(out, "%s/%.2s/%s.%s", dir, id, id, ext);
}

/* Finds the .bin files under dir (at most max); counts files named .tmp.* into *tmps. */
static int find_bins(const char *dir, char paths[][512], int max, int *tmps)
{
    int n = 0;
    *tmps = 0;
    DIR *top = opendir(dir);
    if (!top) return 0;
    struct dirent *d;
    while ((d = readdir(top))) {
        if (d->d_name[0] == '.') continue;
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", dir, d->d_name);
        DIR *s = opendir(sub);
        if (!s) continue;
        struct dirent *e;
        while ((e = readdir(s))) {
            size_t l = strlen(e->d_name);
            if (!strncmp(e->d_name, ".tmp.", 5)) (*tmps)++;
            else if (l > 4 && !strcmp(e->d_name + l - 4, ".bin") && n < max &&
                     snprintf(paths[n], 512, "%s/%s", sub, e->d_name) < 512)
                n++;
        }
        closedir(s);
    }
    closedir(top);
    return n;
}

static void rm_rf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    assert_int_equal(system(cmd), 0);
}

static const char *IR1 = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
static const char *IR2 = "77c0ffee12345678deadbeef00112233";

static const char *CANON1 = "backend=cpu\nfast_math=0\nformat=1\nir=a1b2c3d4e5f60718293a4b5c6d7e8f90\n"
                            "llvm=14.0.6\nprecision=double\n"
                            "target=x86_64-pc-linux-gnu znver3 +avx2,+fma\n";

static void round_trip(void **state)
{
    (void)state;
    char *tmp = tu_tempdir("cache-rt");
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/deep/er/cache", tmp); /* missing: created with its parents */
    cache *c = cache_open(dir, 0);
    assert_non_null(c);
    assert_null(cache_warning(c));
    assert_true(cache_on_disk(c));
    assert_string_equal(cache_dir(c), dir);

    cache_key k;
    make_key(&k, IR1, "double");
    expect_miss(c, &k);
    unsigned char *blob = pattern("blob", 100000);
    const char *src = "define void @k() {\n  ret void\n}\n";
    assert_int_equal(cache_put(c, &k, blob, 100000, src, "ll"), 0);
    expect_hit(c, &k, blob, 100000);

    /* the layout: ab/ID.bin, ID.key holding the canonical (sorted) key text, ID.ll */
    entry_file(dir, CANON1, "bin", p);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 40 + strlen(CANON1) + 100000);
    entry_file(dir, CANON1, "key", p);
    char *text = tu_read_file(p, NULL);
    assert_non_null(text);
    assert_string_equal(text, CANON1);
    free(text);
    entry_file(dir, CANON1, "ll", p);
    text = tu_read_file(p, NULL);
    assert_non_null(text);
    assert_string_equal(text, src);
    free(text);

    /* the order components are given in does not matter */
    cache_key r = {0};
    for (int i = k.n - 1; i >= 0; i--) cache_key_add(&r, k.names[i], k.values[i]);
    expect_hit(c, &r, blob, 100000);

    /* an empty payload, a CUDA source, no source at all */
    cache_key e;
    make_key(&e, IR2, "double");
    assert_int_equal(cache_put(c, &e, NULL, 0, "__global__ void k() {}\n", "cu"), 0);
    expect_hit(c, &e, "", 0);
    make_key(&e, IR2, "float");
    assert_int_equal(cache_put(c, &e, "xyz", 3, NULL, NULL), 0);
    expect_hit(c, &e, "xyz", 3);

    /* malformed keys and extensions are refused, without turning the cache off */
    cache_key bad;
    make_key(&bad, "has\nnewline", "double");
    assert_int_equal(cache_put(c, &bad, "x", 1, NULL, NULL), -1);
    expect_miss(c, &bad);
    make_key(&bad, IR1, "double");
    bad.names[1] = "ir"; /* a repeated name */
    assert_int_equal(cache_put(c, &bad, "x", 1, NULL, NULL), -1);
    make_key(&bad, IR1, "double");
    bad.names[2] = "a=b";
    assert_int_equal(cache_put(c, &bad, "x", 1, NULL, NULL), -1);
    bad.n = 0;
    assert_int_equal(cache_put(c, &bad, "x", 1, NULL, NULL), -1);
    assert_int_equal(cache_put(c, &k, "x", 1, "src", "bin"), -1);
    assert_int_equal(cache_put(c, &k, "x", 1, "src", "../x"), -1);
    assert_int_equal(cache_key_add(&bad, "x", "y"), 0);
    bad.n = CACHE_KEY_MAX;
    assert_int_equal(cache_key_add(&bad, "x", "y"), -1);
    assert_true(cache_on_disk(c));
    assert_null(cache_warning(c));
    cache_close(c);

    /* the next run finds it */
    c = cache_open(dir, 0);
    expect_hit(c, &k, blob, 100000);
    cache_close(c);
    free(blob);
    rm_rf(tmp);
    free(tmp);
}

static void one_component_differs(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-explain");
    cache *c = cache_open(dir, 0);
    char msg[1024];
    cache_key k, k2;
    make_key(&k, IR1, "double");
    assert_int_equal(cache_explain(c, &k, msg, sizeof msg), 0);
    assert_string_equal(msg, "miss: the cache holds no entries");

    assert_int_equal(cache_put(c, &k, "obj", 3, "ir", "ll"), 0);
    assert_int_equal(cache_explain(c, &k, msg, sizeof msg), 1);
    assert_true(!strncmp(msg, "hit: entry ", 11));

    /* precision differs: a miss, and explain names precision and both values */
    make_key(&k2, IR1, "float");
    expect_miss(c, &k2);
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    char want_id[600];
    entry_file("", CANON1, "bin", want_id); /* "/ab/ID.bin" */
    char id12[13];
    memcpy(id12, want_id + 4, 12);
    id12[12] = 0;
    assert_non_null(strstr(msg, id12));
    assert_non_null(strstr(msg, "(6 of 7 components shared)"));
    assert_non_null(strstr(msg, "differs in precision (float vs double)"));
    assert_null(strstr(msg, "ir ("));

    /* the ir hash differs: long values are shortened */
    make_key(&k2, IR2, "double");
    expect_miss(c, &k2);
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "differs in ir (77c0ffee1234… vs a1b2c3d4e5f6…)"));

    /* the nearest entry is the one sharing the most components */
    cache_key far;
    make_key(&far, IR2, "float");
    assert_int_equal(cache_put(c, &far, "far", 3, NULL, NULL), 0);
    make_key(&k2, IR1, "single");
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, id12));
    assert_non_null(strstr(msg, "differs in precision (single vs double)"));

    /* a component added or missing */
    make_key(&k2, IR1, "double");
    cache_key_add(&k2, "fma", "1");
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "differs in fma (1 vs absent)"));
    make_key(&k2, IR1, "double");
    k2.n--; /* no format */
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "differs in format (absent vs 1)"));

    /* only the build of pdejit differs: a miss, and explain says the entry is another build's */
    cache_key kb;
    make_key(&kb, IR2, "double");
    cache_key_add(&kb, "build", "aaaa");
    assert_int_equal(cache_put(c, &kb, "old", 3, NULL, NULL), 0);
    make_key(&k2, IR2, "double");
    cache_key_add(&k2, "build", "bbbb");
    expect_miss(c, &k2);
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "(7 of 8 components shared) differs in build (bbbb vs aaaa): it was compiled by "
                                "another build of pdejit, and is never loaded by this one"));
    make_key(&k2, IR2, "single"); /* more than the build differs: no such sentence */
    cache_key_add(&k2, "build", "bbbb");
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "differs in precision (single vs double), build (bbbb vs aaaa)"));
    assert_null(strstr(msg, "another build"));
    make_key(&k2, IR2, "double");
    expect_hit(c, &kb, "old", 3);
    k2.n--;                                              /* no format, ... */
    cache_key_add(&k2, "build", "aaaa");                 /* ... the same build */
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), 0);
    assert_null(strstr(msg, "another build"));

    /* a tiny buffer is still terminated */
    char small[10];
    assert_int_equal(cache_explain(c, &k2, small, sizeof small), 0);
    assert_int_equal(strlen(small), 9);
    k2.names[0] = "";
    assert_int_equal(cache_explain(c, &k2, msg, sizeof msg), -1);
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

enum { TRUNC_HALF, TRUNC_HEADER, TRUNC_EMPTY, ZEROED, RANDOM, RANDOM_AFTER_MAGIC, VERSION_BUMP,
       PAYLOAD_FLIP, KEY_ALTERED, N_DAMAGE };

static void damage(const char *path, int how)
{
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(path, &len);
    assert_non_null(b);
    assert_true(len > 64);
    srand(1234 + how);
    switch (how) {
    case TRUNC_HALF: len /= 2; break;
    case TRUNC_HEADER: len = 20; break;
    case TRUNC_EMPTY: len = 0; break;
    case ZEROED: memset(b, 0, len); break;
    case RANDOM: for (size_t i = 0; i < len; i++) b[i] = (unsigned char)rand(); break;
    case RANDOM_AFTER_MAGIC: for (size_t i = 12; i < len; i++) b[i] = (unsigned char)rand(); break;
    case VERSION_BUMP: b[8]++; break;
    case PAYLOAD_FLIP: b[len - 1] ^= 0x40; break;
    case KEY_ALTERED: b[40 + 3] ^= 0x01; break; /* the stored key text no longer matches */
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
}

static void damaged_entries(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-damage");
    cache *c = cache_open(dir, 0);
    cache_key k;
    make_key(&k, IR1, "double");
    unsigned char *blob = pattern("damage", 5000);
    char bin[600], msg[1024];
    entry_file(dir, CANON1, "bin", bin);
    static const char *why[N_DAMAGE] = {"damaged", "damaged", "damaged", "damaged", "damaged",
                                        "damaged", "cache format 2", "damaged", "another key"};
    for (int how = 0; how < N_DAMAGE; how++) {
        assert_int_equal(cache_put(c, &k, blob, 5000, "src", "ll"), 0);
        expect_hit(c, &k, blob, 5000);
        damage(bin, how);
        expect_miss(c, &k);
        assert_int_equal(cache_explain(c, &k, msg, sizeof msg), 0);
        if (!strstr(msg, why[how])) fail_msg("damage %d: explain says '%s'", how, msg);
        /* a fresh handle also misses, and the next put replaces the entry */
        cache *c2 = cache_open(dir, 0);
        expect_miss(c2, &k);
        assert_int_equal(cache_put(c2, &k, blob, 5000, "src", "ll"), 0);
        expect_hit(c2, &k, blob, 5000);
        cache_close(c2);
        expect_hit(c, &k, blob, 5000);
        assert_true(cache_on_disk(c));
    }
    assert_null(cache_warning(c));
    free(blob);
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

static off_t entry_bytes(const char *dir, const char *canonical)
{
    static const char *exts[] = {"bin", "key", "ll"};
    off_t total = 0;
    for (int i = 0; i < 3; i++) {
        char p[600];
        struct stat st;
        entry_file(dir, canonical, exts[i], p);
        assert_int_equal(stat(p, &st), 0);
        total += st.st_size;
    }
    return total;
}

static void lru_eviction(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-lru");
    char irs[8][40];
    cache_key k[8];
    unsigned char *blob = pattern("lru", 10000);
    for (int i = 0; i < 8; i++) {
        snprintf(irs[i], sizeof irs[i], "%032d", i);
        make_key(&k[i], irs[i], "double");
    }
    /* measure one entry with a roomy cache */
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k[0], blob, 10000, "source text", "ll"), 0);
    char canon[512];
    snprintf(canon, sizeof canon, "backend=cpu\nfast_math=0\nformat=1\nir=%s\nllvm=14.0.6\n"
             "precision=double\ntarget=x86_64-pc-linux-gnu znver3 +avx2,+fma\n", irs[0]);
    off_t one = entry_bytes(dir, canon);
    cache_close(c);

    /* room for five entries and a half */
    c = cache_open(dir, (uint64_t)(5 * one + one / 2));
    for (int i = 1; i < 5; i++) assert_int_equal(cache_put(c, &k[i], blob, 10000, "source text", "ll"), 0);
    for (int i = 0; i < 5; i++) expect_hit(c, &k[i], blob, 10000); /* all five kept; 0 is oldest */
    expect_hit(c, &k[0], blob, 10000);                              /* now 1 is the oldest */
    expect_hit(c, &k[2], blob, 10000);                              /* then 3 */
    assert_int_equal(cache_put(c, &k[5], blob, 10000, "source text", "ll"), 0);
    expect_miss(c, &k[1]);
    assert_int_equal(cache_put(c, &k[6], blob, 10000, "source text", "ll"), 0);
    expect_miss(c, &k[3]);
    int kept[] = {0, 2, 4, 5, 6};
    for (int i = 0; i < 5; i++) expect_hit(c, &k[kept[i]], blob, 10000);
    /* the evicted entries left nothing behind */
    char p[600];
    snprintf(canon, sizeof canon, "backend=cpu\nfast_math=0\nformat=1\nir=%s\nllvm=14.0.6\n"
             "precision=double\ntarget=x86_64-pc-linux-gnu znver3 +avx2,+fma\n", irs[1]);
    entry_file(dir, canon, "key", p);
    assert_int_equal(access(p, F_OK), -1);
    entry_file(dir, canon, "ll", p);
    assert_int_equal(access(p, F_OK), -1);

    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    assert_int_equal(cache_stats(c, f), 0);
    fclose(f);
    assert_non_null(strstr(out, "entries: 5 (0 damaged)"));
    assert_non_null(strstr(out, "2 evicted"));
    free(out);

    /* an entry larger than the whole cap is not kept */
    cache_close(c);
    c = cache_open(dir, 1000);
    assert_int_equal(cache_put(c, &k[7], blob, 10000, NULL, NULL), 0);
    expect_miss(c, &k[7]);
    cache_close(c);
    free(blob);
    rm_rf(dir);
    free(dir);
}

/* ---- 8 processes on one empty cache ---- */

#define NPROC 8
#define NSHARED 4
#define NOWN 6

static void hammer_key(cache_key *k, char *ir, int proc, int which)
{
    if (proc < 0) snprintf(ir, 40, "shared-%d", which);
    else snprintf(ir, 40, "proc%d-%d", proc, which);
    make_key(k, ir, "double");
}

static size_t hammer_len(const char *ir) { return 100 + XXH3_64bits(ir, strlen(ir)) % 200000; }

static int hammer(const char *dir, int proc)
{
    cache *c = cache_open(dir, 0);
    if (!c || !cache_on_disk(c)) return 10;
    srand(77 + proc);
    int rc = 0;
    for (int it = 0; it < 120 && !rc; it++) {
        char ir[40];
        cache_key k;
        int shared = rand() % 2;
        hammer_key(&k, ir, shared ? -1 : proc, rand() % (shared ? NSHARED : NOWN));
        size_t want = hammer_len(ir), n = 0;
        unsigned char *expect = pattern(ir, want);
        void *got = NULL;
        int hit = cache_get(c, &k, &got, &n);
        if (hit && (n != want || memcmp(got, expect, n))) rc = 11;
        if (!rc && (!hit || it % 3 == 0) && cache_put(c, &k, expect, want, ir, "ll") != 0) rc = 12;
        free(got);
        free(expect);
    }
    if (!rc && cache_warning(c)) rc = 13;
    cache_close(c);
    return rc;
}

static void concurrent_processes(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-procs");
    pid_t pids[NPROC];
    fflush(NULL);
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int rc = hammer(dir, i);
            free(dir); /* the child's copy, so that its leak check sees only the cache */
            exit(rc);
        }
    }
    for (int i = 0; i < NPROC; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("process %d: status %#x", i, st);
    }
    /* only complete, valid entries remain: each .bin has its .key and .ll, and loads */
    static char bins[NSHARED + NPROC * NOWN + 8][512];
    int tmps, n = find_bins(dir, bins, NSHARED + NPROC * NOWN + 8, &tmps);
    assert_int_equal(tmps, 0);
    assert_true(n >= NSHARED && n <= NSHARED + NPROC * NOWN);
    cache *c = cache_open(dir, 0);
    for (int i = 0; i < n; i++) {
        char p[520], ir[64] = "";
        strcpy(p, bins[i]);
        strcpy(p + strlen(p) - 3, "key");
        char *text = tu_read_file(p, NULL), *line = text;
        assert_non_null(text);
        for (; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
            if (!strncmp(line, "ir=", 3)) sscanf(line + 3, "%63[^\n]", ir);
        free(text);
        strcpy(p + strlen(p) - 3, "ll");
        text = tu_read_file(p, NULL);
        assert_non_null(text);
        assert_string_equal(text, ir);
        free(text);
        cache_key k;
        make_key(&k, ir, "double");
        size_t want = hammer_len(ir);
        unsigned char *expect = pattern(ir, want);
        expect_hit(c, &k, expect, want);
        free(expect);
    }
    for (int s = 0; s < NSHARED; s++) { /* the shared keys were all touched */
        char ir[40];
        cache_key k;
        hammer_key(&k, ir, -1, s);
        void *got;
        size_t len;
        assert_int_equal(cache_get(c, &k, &got, &len), 1);
        free(got);
    }
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* ---- unusable folders ---- */

/* A cache in `dir` must be memory-only with exactly one warning naming the folder. */
static void expect_memory_only(const char *dir, const char *reason)
{
    cache *c = cache_open(dir, 0);
    assert_non_null(c);
    assert_false(cache_on_disk(c));
    const char *w = cache_warning(c);
    assert_non_null(w);
    if (!strstr(w, "kernel cache disabled: ") || !strstr(w, dir) || !strstr(w, reason) ||
        !strstr(w, "kernels are kept in memory only"))
        fail_msg("warning: %s", w);
    char *first = strdup(w);
    cache_key k;
    make_key(&k, IR1, "double");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cache_put(c, &k, "obj", 3, "src", "ll"), -1);
        expect_miss(c, &k);
    }
    /* the same one warning after failed puts and gets */
    assert_ptr_equal(cache_warning(c), w);
    assert_string_equal(cache_warning(c), first);
    char msg[1024];
    assert_int_equal(cache_explain(c, &k, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "miss: kernel cache disabled"));
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    assert_int_equal(cache_stats(c, f), 0);
    assert_int_equal(cache_list(c, f), 0);
    fclose(f);
    assert_non_null(strstr(out, "state: memory only"));
    free(out);
    assert_int_equal(cache_clear(c), -1);
    free(first);
    cache_close(c);
}

static void unwritable_folder(void **state)
{
    (void)state;
    char *tmp = tu_tempdir("cache-ro");
    char p[600];

    /* a path whose parent is a regular file: unwritable even for root */
    snprintf(p, sizeof p, "%s/file", tmp);
    FILE *f = fopen(p, "w");
    fputs("x", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/file/cache", tmp);
    expect_memory_only(p, "Not a directory");
    expect_memory_only("/proc/version/x", "Not a directory");

    /* a read-only folder (chmod 0555): root writes anyway, so only when that blocks writes */
    snprintf(p, sizeof p, "%s/ro", tmp);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(chmod(p, 0555), 0);
    char probe[700];
    snprintf(probe, sizeof probe, "%s/probe", p);
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        close(fd);
        unlink(probe);
        print_message("(running as root: chmod 0555 does not stop writes; covered by the paths "
                      "above)\n");
    } else {
        /* it exists: read-only (hits still load; test_cache_trust covers that), one warning */
        cache *c = cache_open(p, 0);
        assert_true(cache_on_disk(c));
        assert_false(cache_writable(c));
        assert_non_null(cache_warning(c));
        assert_non_null(strstr(cache_warning(c), "kernel cache is read-only"));
        assert_non_null(strstr(cache_warning(c), "Permission denied"));
        cache_key k;
        make_key(&k, IR1, "double");
        assert_int_equal(cache_put(c, &k, "obj", 3, "src", "ll"), -1);
        expect_miss(c, &k);
        cache_close(c);
        char sub[700];
        snprintf(sub, sizeof sub, "%s/sub", p); /* one that cannot be created */
        expect_memory_only(sub, "Permission denied");
    }
    rm_rf(tmp);
    free(tmp);
}

/* A put that fails part-way (here the file size limit; on a real disk, ENOSPC) turns the cache
 * read-only with one warning (what is stored still hits) and leaves no part of the entry visible. */
static int put_with_small_fsize(const char *dir)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &rl) < 0) return 20;
    cache *c = cache_open(dir, 0);
    if (!cache_on_disk(c) || cache_warning(c)) return 21;
    cache_key k, small;
    make_key(&k, IR1, "double");
    make_key(&small, IR2, "double");
    unsigned char *big = pattern("big", 100000);
    int rc = 0;
    if (cache_put(c, &small, "ok", 2, "small", "ll") != 0) rc = 22;
    else if (cache_put(c, &k, big, 100000, "source", "ll") != -1) rc = 23;
    else if (cache_writable(c) || !cache_on_disk(c)) rc = 24; /* read-only from now on */
    else if (!cache_warning(c) || !strstr(cache_warning(c), "File too large") ||
             !strstr(cache_warning(c), "kernel cache is read-only")) rc = 25;
    else if (cache_put(c, &small, "ok", 2, "small", "ll") != -1) rc = 26;
    else {
        const char *w = cache_warning(c);
        void *got = NULL;
        size_t len;
        if (cache_get(c, &k, &got, &len)) rc = 27;             /* nothing of the big one */
        else if (cache_get(c, &small, &got, &len) != 1 || len != 2 || memcmp(got, "ok", 2))
            rc = 28;                                            /* what is stored still hits */
        else if (cache_warning(c) != w) rc = 29;                /* the one warning, unchanged */
        free(got);
    }
    free(big);
    cache_close(c);
    return rc;
}

static void put_failing_midway(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-full");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int rc = put_with_small_fsize(dir);
        free(dir);
        exit(rc);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) fail_msg("child: status %#x", st);
    /* the small entry is there, nothing of the big one, no temporary files */
    char bins[4][512];
    int tmps;
    assert_int_equal(find_bins(dir, bins, 4, &tmps), 1);
    assert_int_equal(tmps, 0);
    char p[600];
    const char *canon = CANON1;
    entry_file(dir, canon, "key", p);
    assert_int_equal(access(p, F_OK), -1);
    entry_file(dir, canon, "ll", p);
    assert_int_equal(access(p, F_OK), -1);
    /* with room again, the next run stores it */
    cache *c = cache_open(dir, 0);
    cache_key k;
    make_key(&k, IR1, "double");
    unsigned char *big = pattern("big", 100000);
    assert_int_equal(cache_put(c, &k, big, 100000, "source", "ll"), 0);
    expect_hit(c, &k, big, 100000);
    free(big);
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

static void stats_list_clear(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-cmds");
    cache *c = cache_open(dir, 256ull << 20);
    cache_key k[3];
    const char *prec[3] = {"double", "float", "half"};
    for (int i = 0; i < 3; i++) {
        make_key(&k[i], IR1, prec[i]);
        assert_int_equal(cache_put(c, &k[i], prec[i], strlen(prec[i]), "src", "ll"), 0);
    }
    expect_hit(c, &k[1], "float", 5); /* most recently used */
    cache_key other;
    make_key(&other, IR2, "double");
    expect_miss(c, &other);

    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    assert_int_equal(cache_stats(c, f), 0);
    fclose(f);
    assert_non_null(strstr(out, dir));
    assert_non_null(strstr(out, "state: on disk"));
    assert_non_null(strstr(out, "entries: 3 (0 damaged)"));
    assert_non_null(strstr(out, "1 hits, 1 misses, 3 puts, 0 evicted"));
    assert_non_null(strstr(out, "of a cap of 268435456 bytes"));
    free(out);

    f = open_memstream(&out, &outlen);
    assert_int_equal(cache_list(c, f), 3);
    fclose(f);
    int lines = 0;
    for (char *q = out; *q; q++) lines += *q == '\n';
    assert_int_equal(lines, 3);
    char *first_nl = strchr(out, '\n');
    *first_nl = 0;
    assert_non_null(strstr(out, "precision=float")); /* the most recently used comes first */
    assert_non_null(strstr(out, "backend=cpu fast_math=0 format=1 ir="));
    free(out);

    /* a damaged entry shows in stats and list */
    char canon[512], bin[600];
    snprintf(canon, sizeof canon, "backend=cpu\nfast_math=0\nformat=1\nir=%s\nllvm=14.0.6\n"
             "precision=half\ntarget=x86_64-pc-linux-gnu znver3 +avx2,+fma\n", IR1);
    entry_file(dir, canon, "bin", bin);
    damage(bin, PAYLOAD_FLIP);
    f = open_memstream(&out, &outlen);
    assert_int_equal(cache_stats(c, f), 0);
    fclose(f);
    assert_non_null(strstr(out, "entries: 3 (1 damaged)"));
    free(out);
    damage(bin, ZEROED);
    f = open_memstream(&out, &outlen);
    assert_int_equal(cache_list(c, f), 3);
    fclose(f);
    assert_non_null(strstr(out, "(damaged)"));
    free(out);

    /* clear removes everything it owns, and nothing else */
    char mine[600];
    snprintf(mine, sizeof mine, "%s/README", dir);
    f = fopen(mine, "w");
    fputs("not the cache's\n", f);
    fclose(f);
    assert_int_equal(cache_clear(c), 3);
    for (int i = 0; i < 3; i++) expect_miss(c, &k[i]);
    assert_int_equal(access(mine, F_OK), 0);
    char bins[4][512];
    int tmps;
    assert_int_equal(find_bins(dir, bins, 4, &tmps), 0);
    f = open_memstream(&out, &outlen);
    assert_int_equal(cache_list(c, f), 0);
    assert_int_equal(cache_stats(c, f), 0);
    fclose(f);
    assert_non_null(strstr(out, "entries: 0 (0 damaged)"));
    free(out);
    /* and the cache works after it */
    assert_int_equal(cache_put(c, &k[0], "double", 6, "src", "ll"), 0);
    expect_hit(c, &k[0], "double", 6);
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* Files left by a process that died mid-put are removed by a later put once an hour old;
 * fresh ones (a put in progress elsewhere) are left alone. */
static void leftovers_tidied(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-tidy");
    char p[4][600];
    snprintf(p[0], sizeof p[0], "%s/ab", dir);
    assert_int_equal(mkdir(p[0], 0755), 0);
    snprintf(p[0], sizeof p[0], "%s/ab/.tmp.ab00.123.0.bin", dir);                 /* stale */
    snprintf(p[1], sizeof p[1], "%s/ab/ab0123456789abcdef0123456789abcd.key", dir); /* stale, no .bin */
    snprintf(p[2], sizeof p[2], "%s/ab/.tmp.ab11.124.0.bin", dir);                 /* fresh */
    snprintf(p[3], sizeof p[3], "%s/ab/ab1123456789abcdef0123456789abcd.ll", dir);  /* fresh, no .bin */
    for (int i = 0; i < 4; i++) {
        FILE *f = fopen(p[i], "w");
        fputs("partial", f);
        fclose(f);
    }
    struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p[0], old, 0), 0);
    assert_int_equal(utimensat(AT_FDCWD, p[1], old, 0), 0);
    cache *c = cache_open(dir, 0);
    cache_key k;
    make_key(&k, IR1, "double");
    expect_miss(c, &k);
    assert_int_equal(cache_put(c, &k, "obj", 3, NULL, NULL), 0);
    assert_int_equal(access(p[0], F_OK), -1);
    assert_int_equal(access(p[1], F_OK), -1);
    assert_int_equal(access(p[2], F_OK), 0);
    assert_int_equal(access(p[3], F_OK), 0);
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    assert_int_equal(cache_list(c, f), 1); /* companions without a .bin are no entries */
    fclose(f);
    free(out);
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* ---- where the folder and the cap come from ---- */

static char *saved_env(const char *name)
{
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

static void restore_env(const char *name, char *v)
{
    if (v) setenv(name, v, 1);
    else unsetenv(name);
    free(v);
}

static void folder_and_cap_from_env(void **state)
{
    (void)state;
    char *tmp = tu_tempdir("cache-env");
    char *s_dir = saved_env("PDEJIT_CACHE_DIR"), *s_xdg = saved_env("XDG_CACHE_HOME");
    char *s_home = saved_env("HOME"), *s_max = saved_env("PDEJIT_CACHE_MAX");
    char p[600], want[700];
    unsetenv("PDEJIT_CACHE_MAX");

    snprintf(p, sizeof p, "%s/env-dir/", tmp); /* the trailing '/' is dropped */
    setenv("PDEJIT_CACHE_DIR", p, 1);
    cache *c = cache_open(NULL, 0);
    snprintf(want, sizeof want, "%s/env-dir", tmp);
    assert_string_equal(cache_dir(c), want);
    assert_true(cache_on_disk(c));
    cache_close(c);

    unsetenv("PDEJIT_CACHE_DIR");
    snprintf(p, sizeof p, "%s/xdg", tmp);
    setenv("XDG_CACHE_HOME", p, 1);
    c = cache_open(NULL, 0);
    snprintf(want, sizeof want, "%s/xdg/pdejit", tmp);
    assert_string_equal(cache_dir(c), want);
    cache_close(c);

    unsetenv("XDG_CACHE_HOME");
    snprintf(p, sizeof p, "%s/home", tmp);
    setenv("HOME", p, 1);
    c = cache_open(NULL, 0);
    snprintf(want, sizeof want, "%s/home/.cache/pdejit", tmp);
    assert_string_equal(cache_dir(c), want);
    struct stat st;
    assert_int_equal(stat(want, &st), 0);
    assert_true(S_ISDIR(st.st_mode));

    /* the cap: PDEJIT_CACHE_MAX, unless the caller passes one */
    cache_key k[2];
    make_key(&k[0], IR1, "double");
    make_key(&k[1], IR2, "double");
    unsigned char *blob = pattern("cap", 1500);
    setenv("PDEJIT_CACHE_MAX", "2K", 1);
    cache *small = cache_open(want, 0);
    assert_null(cache_warning(small));
    assert_int_equal(cache_put(small, &k[0], blob, 1500, NULL, NULL), 0);
    assert_int_equal(cache_put(small, &k[1], blob, 1500, NULL, NULL), 0);
    expect_miss(small, &k[0]);
    expect_hit(small, &k[1], blob, 1500);
    cache_close(small);
    cache *big = cache_open(want, 1 << 20);
    assert_int_equal(cache_put(big, &k[0], blob, 1500, NULL, NULL), 0);
    expect_hit(big, &k[0], blob, 1500);
    expect_hit(big, &k[1], blob, 1500);
    cache_close(big);
    setenv("PDEJIT_CACHE_MAX", "lots", 1);
    cache *bad = cache_open(want, 0);
    assert_non_null(cache_warning(bad));
    assert_non_null(strstr(cache_warning(bad), "ignoring PDEJIT_CACHE_MAX=lots"));
    assert_true(cache_on_disk(bad)); /* still works, with the default cap */
    expect_hit(bad, &k[0], blob, 1500);
    cache_close(bad);
    cache_close(c);
    free(blob);

    uint64_t b;
    assert_int_equal(cache_parse_size("1234", &b), 0);
    assert_int_equal(b, 1234);
    assert_int_equal(cache_parse_size("64K", &b), 0);
    assert_int_equal(b, 65536);
    assert_int_equal(cache_parse_size("256m", &b), 0);
    assert_int_equal(b, 256ull << 20);
    assert_int_equal(cache_parse_size("2GiB", &b), 0);
    assert_int_equal(b, 2ull << 30);
    assert_int_equal(cache_parse_size("1T", &b), 0);
    assert_int_equal(b, 1ull << 40);
    assert_int_equal(cache_parse_size("0", &b), -1);
    assert_int_equal(cache_parse_size("", &b), -1);
    assert_int_equal(cache_parse_size("12Q", &b), -1);
    assert_int_equal(cache_parse_size("-5", &b), -1);
    assert_int_equal(cache_parse_size("99999999999999999999", &b), -1);
    assert_int_equal(cache_parse_size("99999999999T", &b), -1);

    restore_env("PDEJIT_CACHE_DIR", s_dir);
    restore_env("XDG_CACHE_HOME", s_xdg);
    restore_env("HOME", s_home);
    restore_env("PDEJIT_CACHE_MAX", s_max);
    rm_rf(tmp);
    free(tmp);
}

int main(void)
{
    unsetenv("PDEJIT_CACHE_MAX"); /* the tests choose their caps */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(one_component_differs),
        cmocka_unit_test(damaged_entries),
        cmocka_unit_test(lru_eviction),
        cmocka_unit_test(concurrent_processes),
        cmocka_unit_test(unwritable_folder),
        cmocka_unit_test(put_failing_midway),
        cmocka_unit_test(stats_list_clear),
        cmocka_unit_test(leftovers_tidied),
        cmocka_unit_test(folder_and_cap_from_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
