/* test_cache_evict.c — eviction costs what the cache's own entries do (issue 25): a folder that
 * also holds many foreign files (the cache pointed at a busy folder, or files dropped into its
 * prefix sub-folders) is not examined file by file at every put. Measured by the work the cache
 * reports (cache_scan_work: folder scans made, files stat'ed by them), never by a clock: a put
 * that leaves the folder under its cap scans nothing; a scan examines exactly the entries'
 * files; the least recently used entries still go, and no foreign file is touched. */
#include "testutil.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cache.h"

static char irs[40][40]; /* a key keeps pointers to its strings */

static void make_key(cache_key *k, int i)
{
    char *ir = irs[i];
    snprintf(ir, sizeof irs[i], "%032d", i);
    memset(k, 0, sizeof *k);
    cache_key_add(k, "ir", ir);
    cache_key_add(k, "backend", "cpu");
    cache_key_add(k, "precision", "double");
}

/* Files directly in dir (not "." and ".."), and in its two-letter sub-folders when deep; their
 * bytes added to *bytes when not NULL. */
static int count_files_bytes(const char *dir, int deep, long long *bytes)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1300];
        snprintf(p, sizeof p, "%s/%.255s", dir, e->d_name);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        if (S_ISDIR(st.st_mode) && deep && strlen(e->d_name) == 2) n += count_files_bytes(p, 0, bytes);
        else if (!S_ISDIR(st.st_mode)) {
            n++;
            if (bytes) *bytes += st.st_size;
        }
    }
    closedir(d);
    return n;
}

static int count_files(const char *dir, int deep) { return count_files_bytes(dir, deep, NULL); }

/* n empty files named NAME-i in dir */
static void drop_foreign(const char *dir, const char *name, int n)
{
    char p[1300];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s-%d", dir, name, i);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fclose(f);
    }
}

static void eviction_counts_only_its_entries(void **state)
{
    (void)state;
    char *dir = tu_tempdir("cache-evict");
    static char blob[2000];
    memset(blob, 7, sizeof blob);
    cache_key k[40];
    for (int i = 0; i < 40; i++) make_key(&k[i], i);
    uint64_t scans, examined, scans0, examined0;

    cache *c = cache_open(dir, 10u << 20);
    assert_int_equal(cache_put(c, &k[0], blob, sizeof blob, "source", "ll"), 0);
    cache_scan_work(c, &scans, &examined);
    assert_int_equal(scans, 1);   /* the first put of a handle learns the folder's size */
    assert_int_equal(examined, 3); /* its .ll, .key and .bin */
    long long one = 0; /* an entry's bytes (every entry here has as many) */
    assert_int_equal(count_files_bytes(dir, 1, &one), 3);
    for (int i = 1; i < 20; i++) assert_int_equal(cache_put(c, &k[i], blob, sizeof blob, "source", "ll"), 0);
    /* foreign files: 5000 in the cache folder, 500 in each prefix sub-folder of an entry */
    drop_foreign(dir, "foreign", 5000);
    DIR *d = opendir(dir);
    struct dirent *e;
    int subs = 0;
    while ((e = readdir(d)))
        if (strlen(e->d_name) == 2 && e->d_name[0] != '.') {
            char sub[1100];
            snprintf(sub, sizeof sub, "%s/%.2s", dir, e->d_name);
            drop_foreign(sub, "notes", 500);
            subs++;
        }
    closedir(d);
    assert_true(subs >= 10);
    int own = 20 * 3, foreign = 5000 + 500 * subs;
    assert_int_equal(count_files(dir, 1), own + foreign);
    for (int i = 20; i < 30; i++) assert_int_equal(cache_put(c, &k[i], blob, sizeof blob, "source", "ll"), 0);
    own += 10 * 3;
    cache_scan_work(c, &scans, &examined);
    assert_int_equal(scans, 1); /* 29 puts under the cap: one scan, at the first */
    assert_int_equal(examined, 3);
    cache_close(c);

    /* a cap of 12 entries: the next put scans once, examines each entry file once (no foreign
       one), and evicts the 19 least recently used entries (0 was just used) */
    c = cache_open(dir, (uint64_t)(12 * one + one / 2));
    void *got = NULL;
    size_t n = 0;
    assert_int_equal(cache_get(c, &k[0], &got, &n), 1); /* 0 becomes the most recently used */
    free(got);
    assert_int_equal(cache_put(c, &k[30], blob, sizeof blob, "source", "ll"), 0);
    own += 3;
    cache_scan_work(c, &scans0, &examined0);
    assert_int_equal(scans0, 1);
    assert_int_equal(examined0, own);
    int kept = 0;
    for (int i = 0; i <= 30; i++) {
        got = NULL;
        int hit = cache_get(c, &k[i], &got, &n);
        free(got);
        kept += hit;
        if (i == 0 || i == 30) assert_int_equal(hit, 1);
        if (i >= 1 && i <= 19) assert_int_equal(hit, 0); /* the oldest went */
    }
    print_message("kept %d of 31 entries; the scan examined %llu files (%d foreign ones in the folder)\n", kept,
                  (unsigned long long)examined0, foreign);
    assert_int_equal(kept, 12); /* 0 and the 11 most recent */
    assert_int_equal(count_files(dir, 1), 3 * kept + foreign); /* every foreign file is still there */
    cache_close(c);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(eviction_counts_only_its_entries)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
