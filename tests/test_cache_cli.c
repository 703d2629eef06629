/* test_cache_cli.c — the kernel cache as `pdejit run` uses it: a second run loads every kernel
 * from disk; renaming and reformatting hit; a changed formula misses; damaged entries are
 * misses that get replaced with correct results; 8 processes on an empty cache; a read-only
 * cache folder degrades to memory with one warning; `pdejit cache` stats/list/explain/clear. */
#include "testutil.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


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
    assert_int_equal(pj("c1", &out, "cache stats"), 0);
    free(out);
    assert_int_equal(pj("c1", &out, "cache list"), 0);
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

/* A cache folder with mode 0555. Root writes anywhere, so as root the run drops to nobody
 * (setpriv); the folder then really refuses writes. */
static void read_only_cache_folder(void **state)
{
    (void)state;
    put("p.pde", problem);
    char cmd[4096], *out;
    snprintf(cmd, sizeof cmd, "chmod 755 %s && mkdir -p %s/ro && chmod 555 %s/ro && chmod 644 %s/p.pde", tu_dir, tu_dir, tu_dir, tu_dir);
    assert_int_equal(tu_run(cmd, NULL), 0);
    const char *as = "";
    if (geteuid() == 0) {
        if (tu_run("command -v setpriv", NULL) != 0) skip();
        as = "setpriv --reuid=65534 --regid=65534 --clear-groups";
    }
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/ro %s %s run p.pde --verbose --out none", tu_dir,
             tu_dir, as, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_int_equal(count(out, "warning: kernel cache disabled"), 1);
    assert_int_equal(count(out, "compiled in"), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "find %s/ro -type f | wc -l", tu_dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_string_equal(out, "0\n"); /* nothing was written */
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_run_loads_everything),
        cmocka_unit_test(damaged_entries_are_replaced),
        cmocka_unit_test(eight_processes_on_an_empty_cache),
        cmocka_unit_test(unwritable_cache_folder),
        cmocka_unit_test(read_only_cache_folder),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
