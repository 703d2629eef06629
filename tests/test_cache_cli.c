/* test_cache_cli.c — the kernel cache as `pdejit run` uses it: a second run loads every kernel
 * from disk; renaming and reformatting hit; a changed formula misses; damaged entries are
 * misses that get replaced with correct results; another build's kernels are never loaded; 8
 * processes on an empty cache; a read-only cache folder serves hits with one warning; `pdejit
 * cache` stats/list/explain/clear; the trust model through the command: named pipes never block,
 * entries that do not load or that crash the run are set aside, planted entries are refused,
 * clear never follows a linked sub-folder. */
#include "testutil.h"
#include "cache.h"
#include <dirent.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>


static const char *problem =
    "mesh grid(nx = 32, ny = 16)\nparam D = 0.1, k = 2\nfield u = exp(-10*(x-0.5)^2)\n"
    "eq dt(u) = D*lap(u) + k*u*(1 - u)\non left: u = 1\ntime dt = 1e-4, steps = 20, scheme = rk2\n";
static const char *renamed =
    "# the same mathematics, renamed and reformatted\nmesh grid(nx=32,ny=16)\nparam diff=0.1,\n      rate=2\n"
    "field c=exp(-10*(x-0.5)^2)\neq dt(c)=diff*lap(c)+rate*c*(1-c)   # growth\non left:c=1\n"
    "time dt=1e-4,steps=20,scheme=rk2\n";
static const char *changed =
    "mesh grid(nx = 32, ny = 16)\nparam D = 0.1, k = 2\nfield u = exp(-10*(x-0.5)^2)\n"
    "eq dt(u) = D*lap(u) + k*u*(2 - u)\non left: u = 1\ntime dt = 1e-4, steps = 20, scheme = rk2\n";

static void put(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs pdejit with the cache folder `cache` (relative to tu_dir). */
static int pj(const char *cache, char **out, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s %s %s", tu_dir, cache, PJ_BINARY, args);
    return tu_run(cmd, out);
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *s = text; (s = strstr(s, what)); s++) n++;
    return n;
}

static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    char *t = tu_read_file(path, NULL);
    assert_non_null(t);
    return t;
}

static void second_run_loads_everything(void **state)
{
    (void)state;
    put("p.pde", problem);
    put("r.pde", renamed);
    put("c.pde", changed);
    char *out;
    assert_int_equal(pj("c1", &out, "run p.pde --verbose --dump ref.csv --backend interp"), 0);
    free(out);
    assert_int_equal(pj("c1", &out, "run p.pde --verbose --dump a.csv"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    free(out);
    assert_int_equal(pj("c1", &out, "run p.pde --verbose --dump b.csv"), 0);
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    assert_int_equal(count(out, "compiled in"), 0);
    free(out);
    char *ref = slurp("ref.csv"), *a = slurp("a.csv"), *b = slurp("b.csv");
    assert_string_equal(ref, a);
    assert_string_equal(ref, b);
    free(ref); free(a); free(b);
    assert_int_equal(pj("c1", &out, "run r.pde --verbose"), 0);
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    free(out);
    assert_int_equal(pj("c1", &out, "cache explain c.pde"), 0);
    assert_int_equal(count(out, "miss"), 2);
    assert_true(count(out, "differs in ir") >= 1);
    free(out);
    assert_int_equal(pj("c1", &out, "run c.pde --verbose"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    free(out);
    assert_int_equal(pj("c1", &out, "cache explain c.pde"), 0);
    assert_int_equal(count(out, "hit"), 2);
    free(out);
    /* another precision is another entry */
    assert_int_equal(pj("c1", &out, "cache explain p.pde --precision single"), 0);
    assert_true(count(out, "differs in precision") >= 1);
    free(out);
    /* a back end that declares no explain says so (the cuda one's: test_gpu) */
    assert_int_equal(pj("c1", &out, "cache explain p.pde --backend interp"), 2);
    assert_non_null(strstr(out, "pdejit cache explain: the interp back end cannot explain its kernel cache yet: use "
                                "--backend cpu"));
    free(out);
    assert_int_equal(pj("c1", &out, "cache stats"), 0);
    free(out);
    assert_int_equal(pj("c1", &out, "cache list"), 0);
    assert_int_equal(count(out, "  cpu stage double ir="), 4);
    free(out);
    assert_int_equal(pj("c1", &out, "cache list --verbose"), 0);
    assert_int_equal(count(out, "backend=cpu"), 4);
    free(out);
    assert_int_equal(pj("c1", &out, "cache clear"), 0);
    assert_non_null(strstr(out, "removed"));
    free(out);
    assert_int_equal(pj("c1", &out, "run p.pde --verbose"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    free(out);
}

/* Every .bin entry under cache folder c. */
static int entries(const char *c, char paths[][1200], int max)
{
    char top[512];
    snprintf(top, sizeof top, "%s/%s", tu_dir, c);
    DIR *d = opendir(top);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] == '.' || strlen(e->d_name) != 2) continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", top, e->d_name);
        DIR *d2 = opendir(sub);
        struct dirent *f;
        while (d2 && (f = readdir(d2)) && n < max) {
            size_t len = strlen(f->d_name);
            if (len > 4 && !strcmp(f->d_name + len - 4, ".bin") && f->d_name[0] != '.') {
                snprintf(paths[n++], 1200, "%s/%.60s", sub, f->d_name);
            }
        }
        if (d2) closedir(d2);
    }
    closedir(d);
    return n;
}

static void damaged_entries_are_replaced(void **state)
{
    (void)state;
    put("p.pde", problem);
    char *out;
    assert_int_equal(pj("c2", &out, "run p.pde --dump ref.csv --backend interp"), 0);
    free(out);
    char *ref = slurp("ref.csv");
    for (int damage = 0; damage < 4; damage++) {
        assert_int_equal(pj("c2", &out, "run p.pde"), 0); /* fills the cache */
        free(out);
        char paths[8][1200];
        int n = entries("c2", paths, 8);
        assert_int_equal(n, 2);
        for (int i = 0; i < n; i++) {
            size_t len;
            char *bytes = tu_read_file(paths[i], &len);
            assert_non_null(bytes);
            FILE *f = fopen(paths[i], "wb");
            if (damage == 0) fwrite(bytes, 1, len / 2, f);              /* truncated */
            else if (damage == 1) for (size_t j = 0; j < len; j++) fputc(0, f); /* zeroed */
            else if (damage == 2) for (size_t j = 0; j < len; j++) fputc(rand() & 255, f); /* random */
            else { bytes[8] = (char)(bytes[8] + 1); fwrite(bytes, 1, len, f); } /* another format version */
            fclose(f);
            free(bytes);
        }
        assert_int_equal(pj("c2", &out, "run p.pde --verbose --dump d.csv"), 0);
        assert_int_equal(count(out, "compiled in"), 2); /* a miss, compiled again */
        free(out);
        char *d = slurp("d.csv");
        assert_string_equal(d, ref);
        free(d);
        assert_int_equal(pj("c2", &out, "run p.pde --verbose"), 0);
        assert_int_equal(count(out, "loaded from the cache in"), 2); /* and replaced */
        free(out);
    }
    free(ref);
}

/* Key text ("name=value\n" lines, modified in place) as a cache_key pointing into it. */
static void parse_key(char *text, cache_key *k)
{
    memset(k, 0, sizeof *k);
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n'), *eq = strchr(line, '=');
        assert_non_null(end);
        assert_true(eq && eq < end);
        *eq = *end = 0;
        assert_int_equal(cache_key_add(k, line, eq + 1), 0);
        line = end + 1;
    }
}

/* Kernels compiled by another build of pdejit (here: this build's entries rewritten under a key
 * whose `build` component differs, as another build would have stored them) are never loaded:
 * the run compiles its own, and `cache explain` names build as the one difference. */
static void another_build_is_never_loaded(void **state)
{
    (void)state;
    put("p.pde", problem);
    char *out;
    assert_int_equal(pj("cb", &out, "run p.pde --verbose --dump ref.csv"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    free(out);
    char paths[8][1200], top[600];
    int n = entries("cb", paths, 8);
    assert_int_equal(n, 2);
    snprintf(top, sizeof top, "%s/cb", tu_dir);
    cache *c = cache_open(top, 0);
    assert_non_null(c);
    for (int i = 0; i < n; i++) {
        char keyp[1200];
        snprintf(keyp, sizeof keyp, "%.*s.key", (int)strlen(paths[i]) - 4, paths[i]);
        char *text = tu_read_file(keyp, NULL);
        assert_non_null(text);
        const char *b = strstr(text, "\nbuild=");
        assert_non_null(b); /* this build's identity: 32 hex digits */
        assert_int_equal(strspn(b + 7, "0123456789abcdef"), 32);
        assert_int_equal(b[39], '\n');
        cache_key k, forged;
        parse_key(text, &k);
        void *obj = NULL;
        size_t len = 0;
        assert_int_equal(cache_get(c, &k, &obj, &len), 1); /* the key as the back end builds it */
        forged = k;
        for (int j = 0; j < k.n; j++)
            if (!strcmp(k.names[j], "build")) forged.values[j] = "0123456789abcdef0123456789abcdef";
        assert_int_equal(cache_put(c, &forged, obj, len, NULL, NULL), 0);
        free(obj);
        free(text);
        assert_int_equal(unlink(paths[i]), 0); /* this build's entry gone: only the other's left */
        assert_int_equal(unlink(keyp), 0);
    }
    cache_close(c);
    assert_int_equal(entries("cb", paths, 8), 2);
    assert_int_equal(pj("cb", &out, "cache explain p.pde"), 0);
    assert_int_equal(count(out, "miss"), 2);
    assert_int_equal(count(out, "differs in build ("), 2);
    assert_int_equal(count(out, "0123456789ab"), 2); /* the stored value, shortened */
    assert_int_equal(count(out, "compiled by another build of pdejit"), 2);
    free(out);
    assert_int_equal(pj("cb", &out, "run p.pde --verbose --dump other.csv"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    assert_int_equal(count(out, "loaded from the cache"), 0);
    free(out);
    char *ref = slurp("ref.csv"), *other = slurp("other.csv");
    assert_string_equal(ref, other);
    free(ref);
    free(other);
    assert_int_equal(entries("cb", paths, 8), 4); /* both builds' entries, side by side */
    assert_int_equal(pj("cb", &out, "run p.pde --verbose"), 0);
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    free(out);
}

static void eight_processes_on_an_empty_cache(void **state)
{
    (void)state;
    put("p.pde", problem);
    char *out;
    assert_int_equal(pj("c3", &out, "run p.pde --dump ref.csv --backend interp"), 0);
    free(out);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && for i in 1 2 3 4 5 6 7 8; do (PDEJIT_CACHE_DIR=c3 %s run p.pde --dump par$i.csv --threads 1 "
             ">log$i 2>&1; echo $? > rc$i) & done; wait",
             tu_dir, PJ_BINARY);
    assert_int_equal(tu_run(cmd, NULL), 0);
    char *ref = slurp("ref.csv");
    for (int i = 1; i <= 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "rc%d", i);
        char *rc = slurp(name);
        assert_string_equal(rc, "0\n");
        free(rc);
        snprintf(name, sizeof name, "par%d.csv", i);
        char *d = slurp(name);
        assert_string_equal(d, ref);
        free(d);
    }
    free(ref);
    /* only valid entries are left: the next run loads both, and stats finds nothing damaged */
    assert_int_equal(pj("c3", &out, "run p.pde --verbose"), 0);
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    free(out);
    char paths[8][1200];
    assert_int_equal(entries("c3", paths, 8), 2);
}

static void unwritable_cache_folder(void **state)
{
    (void)state;
    put("p.pde", problem);
    put("afile", "not a folder\n");
    char *out;
    /* a cache folder under a regular file cannot exist, even for root */
    assert_int_equal(pj("afile/cache", &out, "run p.pde --verbose --dump ro.csv"), 0);
    assert_int_equal(count(out, "warning: kernel cache disabled"), 1);
    assert_int_equal(count(out, "compiled in"), 2);
    free(out);
    assert_int_equal(pj("c1", &out, "run p.pde --backend interp --dump ref.csv"), 0);
    free(out);
    char *a = slurp("ro.csv"), *b = slurp("ref.csv");
    assert_string_equal(a, b);
    free(a);
    free(b);
}

/* A cache folder with mode 0555 still serves the kernels stored there, writes nothing and warns
 * once. Root writes anywhere, so as root the runs drop to nobody (setpriv), who owns the folder. */
static void read_only_cache_folder(void **state)
{
    (void)state;
    put("p.pde", problem);
    char cmd[4096], *out;
    snprintf(cmd, sizeof cmd, "chmod 711 %s && mkdir -p %s/ro && chmod 700 %s/ro && chmod 644 %s/p.pde", tu_dir,
             tu_dir, tu_dir, tu_dir);
    assert_int_equal(tu_run(cmd, NULL), 0);
    const char *as = "";
    if (geteuid() == 0) {
        if (tu_run("command -v setpriv", NULL) != 0) {
            print_message("(skipped: running as root without setpriv to drop to nobody)\n");
            skip();
        }
        as = "setpriv --reuid=65534 --regid=65534 --clear-groups";
        snprintf(cmd, sizeof cmd, "chown 65534:65534 %s/ro", tu_dir);
        assert_int_equal(tu_run(cmd, NULL), 0);
    }
    /* filled while writable */
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/ro %s %s run p.pde --verbose --out none", tu_dir,
             tu_dir, as, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    assert_int_equal(count(out, "warning"), 0);
    free(out);
    snprintf(cmd, sizeof cmd, "chmod 555 %s/ro", tu_dir);
    assert_int_equal(tu_run(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd, "find %s/ro -type f | wc -l", tu_dir);
    char *files_before;
    assert_int_equal(tu_run(cmd, &files_before), 0);
    /* read-only: both kernels loaded from it, one warning */
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/ro %s %s run p.pde --verbose --out none --fast-math",
             tu_dir, tu_dir, as, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0); /* other kernels: compiled, kept in memory */
    assert_int_equal(count(out, "warning: kernel cache is read-only"), 1);
    assert_int_equal(count(out, "compiled in"), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/ro %s %s run p.pde --verbose --out none", tu_dir,
             tu_dir, as, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_int_equal(count(out, "warning: kernel cache is read-only"), 1);
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "find %s/ro -type f | wc -l", tu_dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_string_equal(out, files_before); /* nothing was written */
    free(out);
    free(files_before);
}

/* Fills cache folder c with p.pde's two kernels; returns their .bin paths in bins. */
static void fill(const char *c, char bins[2][1200])
{
    char *out;
    assert_int_equal(pj(c, &out, "run p.pde --out none"), 0);
    free(out);
    assert_int_equal(entries(c, bins, 2), 2);
}

/* Named pipes in place of the entries: explain and run refuse them without blocking (a run
 * that blocks is killed by timeout, exit 124), compile afresh and say so once. */
static void named_pipe_entries_never_block(void **state)
{
    (void)state;
    put("p.pde", problem);
    char bins[2][1200], cmd[8192], *out;
    fill("c4", bins);
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "rm %s && mkfifo %s", bins[i], bins[i]);
        assert_int_equal(tu_run(cmd, NULL), 0);
    }
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=c4 timeout 60 %s cache explain p.pde", tu_dir, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_int_equal(count(out, "not a regular file"), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=c4 timeout 60 %s cache stats", tu_dir, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "refused: 2 "));
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=c4 timeout 60 %s run p.pde --verbose --out none", tu_dir,
             PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    assert_int_equal(count(out, "warning: kernel cache: refused"), 1);
    free(out);
    assert_int_equal(pj("c4", &out, "run p.pde --verbose --out none"), 0); /* our pipes were replaced */
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    free(out);
}

/* Makes every kernel function (pj_*) of the ELF object obj start with x86-64's ud2, an illegal
 * instruction: an object that loads, then kills the process running it with SIGILL (as one for a
 * newer CPU would). Returns how many functions it patched. */
static int patch_kernels_to_trap(unsigned char *obj, size_t len)
{
    Elf64_Ehdr eh;
    memcpy(&eh, obj, sizeof eh);
    assert_true(eh.e_shoff + (size_t)eh.e_shnum * sizeof(Elf64_Shdr) <= len);
    int patched = 0;
    for (int i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, strsh;
        memcpy(&sh, obj + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_SYMTAB) continue;
        memcpy(&strsh, obj + eh.e_shoff + (size_t)sh.sh_link * sizeof strsh, sizeof strsh);
        for (size_t o = 0; o + sizeof(Elf64_Sym) <= sh.sh_size; o += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            Elf64_Shdr text;
            memcpy(&sym, obj + sh.sh_offset + o, sizeof sym);
            const char *name = (const char *)obj + strsh.sh_offset + sym.st_name;
            if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || strncmp(name, "pj_", 3) ||
                sym.st_shndx == SHN_UNDEF || sym.st_shndx >= eh.e_shnum)
                continue;
            memcpy(&text, obj + eh.e_shoff + (size_t)sym.st_shndx * sizeof text, sizeof text);
            size_t at = text.sh_offset + sym.st_value;
            assert_true(at + 2 <= len);
            obj[at] = 0x0f; /* ud2 */
            obj[at + 1] = 0x0b;
            patched++;
        }
    }
    return patched;
}

/* Rewrites the payload of the entry at path (how: 0 garbage, 1 the object's ELF machine made
 * AArch64, an object for another CPU, 2 its kernels made to trap with an illegal instruction)
 * with a checksum that matches again: only loading or running it can tell. */
static void forge_payload(const char *path, int how)
{
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(path, &len);
    assert_non_null(b);
    assert_true(len > 64);
    uint32_t klen = (uint32_t)b[12] | (uint32_t)b[13] << 8 | (uint32_t)b[14] << 16 | (uint32_t)b[15] << 24;
    size_t off = 40 + klen;
    assert_true(off + 20 < len);
    unsigned char *payload = b + off;
    size_t plen = len - off;
    if (how == 0) {
        for (size_t i = 0; i < plen; i++) payload[i] = (unsigned char)(i * 131 + 7);
    } else if (how == 1) {
        assert_memory_equal(payload, "\177ELF", 4);
        payload[18] = 183; /* e_machine: EM_AARCH64 */
        payload[19] = 0;
    } else {
        assert_memory_equal(payload, "\177ELF", 4);
        assert_true(patch_kernels_to_trap(payload, plen) >= 1);
    }
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(payload, plen));
    memcpy(b + 24, sum.digest, 16);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
}

/* An entry with a valid checksum whose object does not load (corrupt, or for another CPU) is set
 * aside and compiled afresh with the same results; cache stats counts it; the next run hits. */
static void entries_that_do_not_load_are_set_aside(void **state)
{
    (void)state;
    put("p.pde", problem);
    char *out;
    assert_int_equal(pj("c5", &out, "run p.pde --dump ref.csv --backend interp"), 0);
    free(out);
    char *ref = slurp("ref.csv");
    for (int how = 0; how < 2; how++) {
        char bins[2][1200];
        assert_int_equal(pj("c5", &out, "cache clear"), 0);
        free(out);
        fill("c5", bins);
        for (int i = 0; i < 2; i++) forge_payload(bins[i], how);
        assert_int_equal(pj("c5", &out, "cache stats"), 0);
        assert_non_null(strstr(out, "entries: 2 (0 damaged)")); /* the checksums hold */
        free(out);
        assert_int_equal(pj("c5", &out, "run p.pde --verbose --dump d.csv"), 0);
        assert_int_equal(count(out, "compiled in"), 2);
        assert_int_equal(count(out, "warning: kernel cache: entry"), 1);
        assert_int_equal(count(out, "did not load"), 1);
        free(out);
        char *d = slurp("d.csv");
        assert_string_equal(d, ref);
        free(d);
        assert_int_equal(pj("c5", &out, "cache stats"), 0);
        assert_non_null(strstr(out, "entries: 2 (0 damaged)"));
        assert_non_null(strstr(out, "failed to load: 2 "));
        free(out);
        assert_int_equal(pj("c5", &out, "run p.pde --verbose"), 0);
        assert_int_equal(count(out, "loaded from the cache in"), 2);
        assert_int_equal(count(out, "warning"), 0);
        free(out);
    }
    free(ref);
}

/* The case: an entry that loads, then kills every run with SIGILL (an object for a newer
 * CPU under a matching key). The run that crashes leaves its entries on trial; the next run finds
 * them, sets them aside, says so once, compiles afresh with the right result; cache stats counts
 * them; the run after that hits. */
static void entries_that_crash_are_set_aside(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    print_message("(skipped: the planted illegal instruction is x86-64's ud2)\n");
    skip();
#endif
    put("p.pde", problem);
    char *out, bins[2][1200];
    assert_int_equal(pj("c9", &out, "run p.pde --dump ref.csv --backend interp"), 0);
    free(out);
    fill("c9", bins);
    for (int i = 0; i < 2; i++) forge_payload(bins[i], 2);
    assert_int_equal(pj("c9", &out, "cache stats"), 0);
    assert_non_null(strstr(out, "entries: 2 (0 damaged)")); /* the checksums hold */
    free(out);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cd %s && ulimit -c 0 && PDEJIT_CACHE_DIR=c9 %s run p.pde --out none",
             tu_dir, PJ_BINARY); /* no core file */
    assert_int_equal(tu_run(cmd, &out), 128 + 4); /* SIGILL */
    free(out);
    assert_int_equal(pj("c9", &out, "cache explain p.pde"), 0);
    assert_int_equal(count(out, "crashed the process that last ran it (pid "), 2);
    free(out);
    assert_int_equal(pj("c9", &out, "run p.pde --verbose --dump d.csv"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    assert_int_equal(count(out, "warning: kernel cache: entry "), 1);
    assert_int_equal(count(out, " crashed the process that last ran it (pid "), 1);
    assert_int_equal(count(out, ".crash, compiled afresh"), 1);
    free(out);
    char *ref = slurp("ref.csv"), *d = slurp("d.csv");
    assert_string_equal(d, ref);
    free(ref);
    free(d);
    assert_int_equal(pj("c9", &out, "cache stats"), 0);
    assert_non_null(strstr(out, "entries: 2 (0 damaged)"));
    assert_non_null(strstr(out, "\ncrashed: 2 (killed the process that ran them: set aside as "
                                "ID.crash and compiled afresh)\n"));
    free(out);
    assert_int_equal(pj("c9", &out, "run p.pde --verbose"), 0);
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    assert_int_equal(count(out, "warning"), 0);
    free(out);
}

/* The case: valid entries planted by another user (here: chown'd to nobody) are refused
 * and never run; the run compiles afresh, gives the right result and warns once. */
static void planted_entries_are_refused(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        print_message("(skipped: planting entries owned by another user needs root to chown)\n");
        skip();
    }
    put("p.pde", problem);
    char bins[2][1200], cmd[8192], *out;
    assert_int_equal(pj("c6", &out, "run p.pde --dump ref.csv --backend interp"), 0);
    free(out);
    fill("c6", bins);
    for (int i = 0; i < 2; i++) {
        forge_payload(bins[i], 0); /* were it run, it would not load: but it must not be opened */
        snprintf(cmd, sizeof cmd, "chown 65534:65534 %s", bins[i]);
        assert_int_equal(tu_run(cmd, NULL), 0);
    }
    assert_int_equal(pj("c6", &out, "run p.pde --verbose --dump d.csv"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    assert_int_equal(count(out, "warning: kernel cache: refused"), 1);
    assert_int_equal(count(out, "owned by another user"), 1);
    assert_int_equal(count(out, "did not load"), 0);
    free(out);
    char *ref = slurp("ref.csv"), *d = slurp("d.csv");
    assert_string_equal(d, ref);
    free(ref);
    free(d);
    struct stat st;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(stat(bins[i], &st), 0);
        assert_int_equal(st.st_uid, 65534); /* left in place, not replaced */
    }
    assert_int_equal(pj("c6", &out, "cache stats"), 0);
    assert_non_null(strstr(out, "refused: 2 "));
    free(out);
}

/* `pdejit cache list` in a cache folder with a 300-character path: one line per entry, none over
 * 120 columns (id, size, last use, back end, kind, precision, fast-math, the IR hash's prefix); a
 * damaged entry says so; --verbose prints each whole key. */
static void list_fits_120_columns(void **state)
{
    (void)state;
    put("p.pde", problem);
    char c[400] = "c9", bins[2][1200], cmd[8192], *out;
    while (strlen(c) < 300) strcat(c, "/a-long-folder-name");
    snprintf(cmd, sizeof cmd, "mkdir -p %s/%s", tu_dir, c);
    assert_int_equal(tu_run(cmd, NULL), 0);
    fill(c, bins);
    assert_int_equal(pj(c, &out, "run p.pde --out none --precision single --fast-math"), 0);
    free(out);
    /* one entry whose header is damaged */
    snprintf(cmd, sizeof cmd, "printf XXXX | dd of=%s conv=notrunc 2>/dev/null", bins[0]);
    assert_int_equal(tu_run(cmd, NULL), 0);
    assert_int_equal(pj(c, &out, "cache list"), 0);
    int lines = 0;
    for (char *l = out; *l; l = strchr(l, '\n') + 1, lines++) {
        assert_non_null(strchr(l, '\n'));
        if (strchr(l, '\n') - l > 120) fail_msg("a line of %d columns: %.200s", (int)(strchr(l, '\n') - l), l);
        assert_int_equal(strspn(l, "0123456789abcdef"), 32); /* the id first */
    }
    assert_int_equal(lines, 4);
    assert_int_equal(count(out, "  cpu stage double ir="), 1);
    assert_int_equal(count(out, "  cpu stage single ir="), 2);
    assert_int_equal(count(out, " fast-math\n"), 2);
    assert_int_equal(count(out, "  (damaged)\n"), 1);
    free(out);
    assert_int_equal(pj(c, &out, "cache list --verbose"), 0);
    assert_int_equal(count(out, "backend=cpu build="), 3);
    assert_int_equal(count(out, " codegen="), 3);
    assert_int_equal(count(out, " target="), 3);
    free(out);
    assert_int_equal(pj(c, &out, "cache stats --verbose"), 2);
    assert_non_null(strstr(out, "pdejit cache stats: --verbose is an option of cache list\n"));
    free(out);
    assert_int_equal(pj(c, &out, "cache explain p.pde -v"), 2);
    assert_non_null(strstr(out, "pdejit cache explain: --verbose is an option of cache list\n"));
    free(out);
    assert_int_equal(pj(c, &out, "cache list --precision single"), 2);
    assert_non_null(strstr(out, "pdejit cache list: --backend, --precision and --fast-math are options of cache "
                                "explain\n"));
    free(out);
    assert_int_equal(pj(c, &out, "cache clear p.pde"), 2);
    assert_non_null(strstr(out, "pdejit cache clear: takes no FILE ('p.pde')\n"));
    free(out);
}

/* `pdejit cache clear` with a prefix sub-folder replaced by a link to a folder elsewhere: the
 * files there stay, and the command says it left something. */
static void clear_never_follows_a_linked_sub_folder(void **state)
{
    (void)state;
    put("p.pde", problem);
    char bins[2][1200], cmd[8192], *out;
    fill("c7", bins);
    char *slash = strrchr(bins[0], '/');
    *slash = 0; /* its prefix sub-folder */
    snprintf(cmd, sizeof cmd, "cd %s && mv %s precious && ln -s %s/precious %s && find precious -type f | wc -l",
             tu_dir, bins[0], tu_dir, bins[0]);
    char *before;
    assert_int_equal(tu_run(cmd, &before), 0);
    assert_true(atoi(before) >= 3);
    assert_int_equal(pj("c7", &out, "cache clear"), 1);
    assert_int_equal(count(out, "warning: kernel cache: refused 1 sub-folder"), 1);
    assert_non_null(strstr(out, "was not removed"));
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && find precious -type f | wc -l", tu_dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_string_equal(out, before);
    free(out);
    free(before);
}

/* A write that fails after start-up — here a swap's kernels under a file size limit (on a real
 * disk: full, or the folder made read-only) — is reported once, not dropped: the run started on
 * cache hits without a warning, and says at the end that the cache turned read-only. */
static void write_failure_while_running_is_reported_once(void **state)
{
    (void)state;
    put("w.pde", "mesh grid(nx = 200000)\nfield u\neq dt(u) = 1\ntime dt = 0.001, until = 80\n"); /* seconds: the edit lands while it runs */
    char cmd[8192], *out;
    assert_int_equal(pj("c8", &out, "run w.pde --out none --steps 1"), 0); /* the first kernels stored */
    free(out);
    snprintf(cmd, sizeof cmd,
             "cd %s && trap '' XFSZ && ulimit -f 8 && (PDEJIT_CACHE_DIR=c8 %s run w.pde --watch --out none --verbose "
             "2> w.log & pid=$!; until grep -q watching w.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
             "sed -i 's/= 1$/= 2/' w.pde; wait $pid; rc=$?; cat w.log; exit $rc)", tu_dir, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_int_equal(count(out, "loaded from the cache in"), 1); /* started on hits, no warning */
    assert_non_null(strstr(out, "w.pde changed: swapped in the new definition"));
    assert_int_equal(count(out, "warning: kernel cache is read-only"), 1);
    assert_non_null(strstr(out, "File too large"));
    const char *warning = strstr(out, "warning"), *swapped = strstr(out, "swapped in");
    assert_true(warning > swapped); /* reported after the swap that failed to store */
    free(out);
}

/* Runs pdejit as nobody (setpriv) with the cache folder tu_dir/CACHE. */
static int as_nobody(const char *cache, char **out, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/%s setpriv --reuid=65534 --regid=65534 --clear-groups "
             "%s %s", tu_dir, tu_dir, cache, PJ_BINARY, args);
    return tu_run(cmd, out);
}

static void sh_ok(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    assert_int_equal(tu_run(cmd, NULL), 0);
}

/* The owner and mode checks as a non-root user (issue 25): root writes through every mode, so
 * here the runs drop to nobody (setpriv) and meet what root prepared: an entry of another user's
 * (root's) in nobody's folder, an entry and a prefix sub-folder writable by the group, and cache
 * folders owned by root or writable by group or others. Each is refused with its one warning,
 * the run compiles afresh and gives the same dump, and nothing of another user's is replaced.
 * Skipped where the test is not root (nothing of another user's can be made) or without setpriv. */
static void owner_and_mode_checks_as_nobody(void **state)
{
    (void)state;
    if (geteuid() != 0 || tu_run("command -v setpriv", NULL) != 0) {
        print_message("(skipped: needs root to prepare another user's files, and setpriv to drop to nobody)\n");
        skip();
    }
    put("p.pde", problem);
    sh_ok("chmod 711 %s && chmod 644 %s/p.pde", tu_dir, tu_dir);
    sh_ok("cd %s && mkdir w n1%s", tu_dir, "");
    sh_ok("cd %s && chmod 700 n1 && chown 65534:65534 w n1%s", tu_dir, "");
    char *out, bin[1200], *want;
    assert_int_equal(as_nobody("n1", &out, "run p.pde --verbose --out none --dump w/a.csv"), 0);
    assert_int_equal(count(out, "compiled in"), 2);
    assert_int_equal(count(out, "warning"), 0);
    free(out);
    want = slurp("w/a.csv");
    /* nobody's own entries are used */
    assert_int_equal(as_nobody("n1", &out, "run p.pde --verbose --out none --dump w/b.csv"), 0);
    assert_int_equal(count(out, "loaded from the cache in"), 2);
    free(out);
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "ls %s/n1/*/*.bin | head -1 | tr -d '\\n'", tu_dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    snprintf(bin, sizeof bin, "%s", out);
    free(out);
    struct { const char *prepare, *why; int replaced; } cases[] = {
        {"chown 0:0 %s && chmod 644 %s", "owned by another user", 0}, /* root's entry, readable, in nobody's folder */
        {"chown 65534:65534 %s && chmod 620 %s", "writable by group or others", 1},
        {"chmod 600 %s && chmod 770 $(dirname %s)", "its folder is writable by group or others", 0},
    };
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, cases[i].prepare, bin, bin);
        assert_int_equal(tu_run(cmd, NULL), 0);
        assert_int_equal(as_nobody("n1", &out, "run p.pde --verbose --out none --dump w/c.csv"), 0);
        print_message("%s", out);
        assert_int_equal(count(out, "warning"), 1);
        char want_warning[1400];
        snprintf(want_warning, sizeof want_warning, "pdejit: warning: kernel cache: refused %s: %s (", bin, cases[i].why);
        assert_non_null(strstr(out, want_warning));
        assert_int_equal(count(out, "compiled in"), 1);
        free(out);
        char *got = slurp("w/c.csv");
        assert_string_equal(got, want);
        free(got);
        struct stat st;
        assert_int_equal(stat(bin, &st), 0);
        assert_int_equal(st.st_uid, i == 0 ? 0 : 65534); /* root's entry neither replaced nor removed */
        if (cases[i].replaced) assert_int_equal(st.st_mode & 0777, 0600);
    }
    /* cache folders nobody must not trust: kept in memory only, the same results */
    sh_ok("cd %s && mkdir r755 n777 n770 && chmod 755 r755 && chown 65534:65534 n777 n770%s", tu_dir, "");
    sh_ok("cd %s && chmod 777 n777 && chmod 770 n770%s", tu_dir, "");
    const char *folders[][2] = {{"r755", "is owned by another user (mode 0755, owner uid 0; this is uid 65534)"},
                                {"n777", "is writable by group or others (mode 0777, owner uid 65534"},
                                {"n770", "is writable by group or others (mode 0770, owner uid 65534"}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(as_nobody(folders[i][0], &out, "run p.pde --out none --dump w/d.csv"), 0);
        char want_warning[1400];
        snprintf(want_warning, sizeof want_warning, "pdejit: warning: kernel cache disabled: %s/%s %s", tu_dir,
                 folders[i][0], folders[i][1]);
        if (!strstr(out, want_warning)) fail_msg("%s\nwanted: %s", out, want_warning);
        assert_int_equal(count(out, "warning"), 1);
        free(out);
        char *got = slurp("w/d.csv");
        assert_string_equal(got, want);
        free(got);
        snprintf(cmd, sizeof cmd, "find %s/%s -mindepth 1 | wc -l", tu_dir, folders[i][0]);
        assert_int_equal(tu_run(cmd, &out), 0);
        assert_string_equal(out, "0\n"); /* nothing written there */
        free(out);
    }
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_run_loads_everything),
        cmocka_unit_test(damaged_entries_are_replaced),
        cmocka_unit_test(another_build_is_never_loaded),
        cmocka_unit_test(eight_processes_on_an_empty_cache),
        cmocka_unit_test(unwritable_cache_folder),
        cmocka_unit_test(read_only_cache_folder),
        cmocka_unit_test(named_pipe_entries_never_block),
        cmocka_unit_test(entries_that_do_not_load_are_set_aside),
        cmocka_unit_test(entries_that_crash_are_set_aside),
        cmocka_unit_test(planted_entries_are_refused),
        cmocka_unit_test(owner_and_mode_checks_as_nobody),
        cmocka_unit_test(clear_never_follows_a_linked_sub_folder),
        cmocka_unit_test(list_fits_120_columns),
        cmocka_unit_test(write_failure_while_running_is_reported_once),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
