/* test_cache_trust.c — the kernel cache's trust model (docs/cache.md) and the defects it closes:
 * private folders; folders and entries that are another user's, writable by others, links or
 * not regular files are refused (a miss, counted, one warning) and never replaced or removed;
 * a named pipe never blocks; a symlinked sub-folder is never followed, by eviction and clear
 * least of all; an entry that does not load, or whose code crashed the process that ran it,
 * is set aside and counted; a read-only folder (from
 * the start, or made so while running) still serves hits and warns once. Cases that need
 * another user run as root (chown to nobody, or a child that drops to nobody) and skip, saying
 * why, otherwise. */
#include "testutil.h"
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#define NOBODY 65534

static const char *IR1 = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
static const char *IR2 = "77c0ffee12345678deadbeef00112233";

static void make_key(cache_key *k, const char *ir)
{
    memset(k, 0, sizeof *k);
    cache_key_add(k, "ir", ir);
    cache_key_add(k, "backend", "cpu");
    cache_key_add(k, "format", "1");
}

/* The id of make_key(ir), from the documented scheme (XXH3-128 of the sorted key text). */
static void key_id(const char *ir, char id[33])
{
    char text[256];
    snprintf(text, sizeof text, "backend=cpu\nformat=1\nir=%s\n", ir);
    XXH128_canonical_t cn;
    XXH128_canonicalFromHash(&cn, XXH3_128bits(text, strlen(text)));
    for (int i = 0; i < 16; i++) sprintf(id + 2 * i, "%02x", cn.digest[i]);
}

static void entry_file(const char *dir, const char *ir, const char *ext, char out[600])
{
    char id[33];
    key_id(ir, id);
    snprintf(out, 600, "%.400s/%.2s/%s.%s", dir, id, id, ext);
}

static void prefix_dir(const char *dir, const char *ir, char out[600])
{
    char id[33];
    key_id(ir, id);
    snprintf(out, 600, "%.400s/%.2s", dir, id);
}

static void expect_hit(cache *c, const cache_key *k, const char *data)
{
    void *got = NULL;
    size_t n = 0;
    assert_int_equal(cache_get(c, k, &got, &n), 1);
    assert_int_equal(n, strlen(data));
    assert_memory_equal(got, data, n);
    free(got);
}

static void expect_miss(cache *c, const cache_key *k)
{
    void *got = NULL;
    size_t n = 0;
    assert_int_equal(cache_get(c, k, &got, &n), 0);
    assert_null(got);
}

static void rm_rf(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    assert_int_equal(system(cmd), 0);
}

static int mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return (int)(st.st_mode & 07777);
}

static char *stats_text(cache *c)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_int_equal(cache_stats(c, f), 0);
    fclose(f);
    return out;
}

/* The warning exists, names `what`, and stays the same one through more gets and puts. */
static void expect_one_warning(cache *c, const cache_key *k, const char *what)
{
    const char *w = cache_warning(c);
    assert_non_null(w);
    if (!strstr(w, what)) fail_msg("warning '%s' does not say '%s'", w, what);
    char *first = strdup(w);
    for (int i = 0; i < 3; i++) {
        void *got = NULL;
        size_t n;
        if (cache_get(c, k, &got, &n)) free(got);
    }
    assert_string_equal(cache_warning(c), first);
    free(first);
}

/* The folders the cache creates are 0700, its files 0600, whatever the umask. */
static void folders_and_files_are_private(void **state)
{
    (void)state;
    char *tmp = tu_tempdir("trust-private");
    char dir[600], p[600];
    snprintf(dir, sizeof dir, "%s/made/by/cache", tmp);
    mode_t old = umask(0);
    cache *c = cache_open(dir, 0);
    umask(old);
    assert_true(cache_writable(c));
    cache_key k;
    make_key(&k, IR1);
    assert_int_equal(cache_put(c, &k, "obj", 3, "src", "ll"), 0);
    assert_int_equal(mode_of(dir), 0700);
    snprintf(p, sizeof p, "%s/made", tmp);
    assert_int_equal(mode_of(p), 0700);
    prefix_dir(dir, IR1, p);
    assert_int_equal(mode_of(p), 0700);
    static const char *exts[] = {"bin", "key", "ll"};
    for (int i = 0; i < 3; i++) {
        entry_file(dir, IR1, exts[i], p);
        assert_int_equal(mode_of(p), 0600);
    }
    cache_close(c);
    rm_rf(tmp);
    free(tmp);
}

/* A cache folder that others can write (0777, 0775, 1777) is not used at all: memory-only with
 * one warning, even though a valid entry lies there. */
static void folder_writable_by_others_is_refused(void **state)
{
    (void)state;
    char *dir = tu_tempdir("trust-shared");
    cache_key k;
    make_key(&k, IR1);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "planted", 7, NULL, NULL), 0);
    cache_close(c);
    static const int modes[] = {0777, 0775, 01777, 0757};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(chmod(dir, (mode_t)modes[i]), 0);
        c = cache_open(dir, 0);
        assert_false(cache_on_disk(c));
        expect_miss(c, &k);
        expect_one_warning(c, &k, "writable by group or others");
        assert_non_null(strstr(cache_warning(c), dir));
        assert_int_equal(cache_put(c, &k, "fresh", 5, NULL, NULL), -1);
        cache_close(c);
    }
    assert_int_equal(chmod(dir, 0700), 0);
    c = cache_open(dir, 0);
    expect_hit(c, &k, "planted"); /* the owner's own entry, once the folder is private again */
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* The planted entry: a valid entry (right checksum, right key) owned by another user.
 * Refused with one warning, never replaced or removed (it is not ours), counted by stats. */
static void planted_entry_of_another_user_is_refused(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        print_message("(skipped: planting an entry owned by another user needs root to chown)\n");
        skip();
    }
    char *dir = tu_tempdir("trust-planted");
    char bin[600], sub[600];
    cache_key k;
    make_key(&k, IR1);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "planted", 7, "src", "ll"), 0);
    cache_close(c);
    entry_file(dir, IR1, "bin", bin);
    assert_int_equal(chown(bin, NOBODY, NOBODY), 0);

    c = cache_open(dir, 0);
    assert_null(cache_warning(c));
    expect_miss(c, &k);
    expect_one_warning(c, &k, "owned by another user");
    assert_non_null(strstr(cache_warning(c), bin));
    char msg[1024];
    assert_int_equal(cache_explain(c, &k, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "refused"));
    /* the fresh compile's put does not replace it, and the cache stays usable */
    assert_int_equal(cache_put(c, &k, "fresh", 5, "src", "ll"), -1);
    assert_true(cache_writable(c));
    struct stat st;
    assert_int_equal(stat(bin, &st), 0);
    assert_int_equal(st.st_uid, NOBODY);
    char *out = stats_text(c);
    assert_non_null(strstr(out, "refused: 1 "));
    free(out);
    /* clear leaves it and says so */
    assert_int_equal(cache_clear(c), -1);
    assert_int_equal(stat(bin, &st), 0);
    cache_close(c);

    /* a prefix sub-folder of another user's is refused the same way */
    assert_int_equal(unlink(bin), 0);
    c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "mine", 4, NULL, NULL), 0);
    cache_close(c);
    prefix_dir(dir, IR1, sub);
    assert_int_equal(chown(sub, NOBODY, NOBODY), 0);
    c = cache_open(dir, 0);
    expect_miss(c, &k);
    expect_one_warning(c, &k, "owned by another user");
    cache_close(c);

    /* and a whole cache folder of another user's */
    assert_int_equal(chown(sub, 0, 0), 0);
    assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
    c = cache_open(dir, 0);
    assert_false(cache_on_disk(c));
    expect_miss(c, &k);
    expect_one_warning(c, &k, "owned by another user");
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* An entry of ours that others can write is refused once; the fresh put replaces it (0600). */
static void group_writable_entry_is_refused_and_replaced(void **state)
{
    (void)state;
    char *dir = tu_tempdir("trust-gw");
    char bin[600], sub[600];
    cache_key k;
    make_key(&k, IR1);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "old", 3, NULL, NULL), 0);
    entry_file(dir, IR1, "bin", bin);
    assert_int_equal(chmod(bin, 0666), 0);
    expect_miss(c, &k);
    expect_one_warning(c, &k, "writable by group or others");
    assert_int_equal(cache_put(c, &k, "new", 3, NULL, NULL), 0);
    assert_int_equal(mode_of(bin), 0600);
    expect_hit(c, &k, "new");
    /* a sub-folder others can write: refused, nothing put into it */
    prefix_dir(dir, IR1, sub);
    assert_int_equal(chmod(sub, 0777), 0);
    expect_miss(c, &k);
    assert_int_equal(cache_put(c, &k, "newer", 5, NULL, NULL), -1);
    assert_int_equal(chmod(sub, 0700), 0);
    expect_hit(c, &k, "new");
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* An entry replaced by a link to a valid entry elsewhere is not followed; the put replaces the
 * link, never what it points to. */
static void symlinked_entry_is_not_followed(void **state)
{
    (void)state;
    char *tmp = tu_tempdir("trust-link");
    char dir[600], bin[600], elsewhere[700];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere.bin", tmp);
    cache_key k;
    make_key(&k, IR1);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "planted", 7, NULL, NULL), 0);
    entry_file(dir, IR1, "bin", bin);
    assert_int_equal(rename(bin, elsewhere), 0);
    assert_int_equal(symlink(elsewhere, bin), 0);
    expect_miss(c, &k);
    expect_one_warning(c, &k, "a symbolic link");
    char msg[1024];
    assert_int_equal(cache_explain(c, &k, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "refused"));
    assert_int_equal(cache_put(c, &k, "fresh", 5, NULL, NULL), 0);
    struct stat st;
    assert_int_equal(lstat(bin, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    expect_hit(c, &k, "fresh");
    size_t len;
    char *kept = tu_read_file(elsewhere, &len);
    assert_non_null(kept);
    assert_non_null(memmem(kept, len, "planted", 7)); /* the link's target is untouched */
    free(kept);
    cache_close(c);
    rm_rf(tmp);
    free(tmp);
}

/* Files outside the cache, named like entries, behind a prefix sub-folder replaced by a link. */
static int count_files(const char *dir)
{
    char cmd[800], *out = NULL; /* a path of up to 700 bytes, quoted, and the pipe */
    snprintf(cmd, sizeof cmd, "find '%s' -type f | wc -l", dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    int n = atoi(out);
    free(out);
    return n;
}

/* A prefix sub-folder replaced by a link to a folder elsewhere: lookups refuse it, puts do not
 * write through it, and neither eviction nor cache_clear removes anything there. */
static void symlinked_sub_folder_is_never_followed(void **state)
{
    (void)state;
    char *tmp = tu_tempdir("trust-sublink");
    char dir[600], sub[600], elsewhere[700], cmd[4000];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(elsewhere, sizeof elsewhere, "%s/precious", tmp);
    cache_key k;
    make_key(&k, IR1);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "obj", 3, "src", "ll"), 0);
    /* move the sub-folder (valid entry and all) elsewhere and link to it */
    prefix_dir(dir, IR1, sub);
    snprintf(cmd, sizeof cmd, "mv '%s' '%s' && ln -s '%s' '%s'", sub, elsewhere, elsewhere, sub);
    assert_int_equal(system(cmd), 0);
    int before = count_files(elsewhere);
    assert_int_equal(before, 3);
    expect_miss(c, &k);
    expect_one_warning(c, &k, "a symbolic link");
    assert_int_equal(cache_put(c, &k, "obj2", 4, "src", "ll"), -1);
    assert_true(cache_writable(c)); /* one sub-folder refused, the cache still works */
    char *out = stats_text(c);
    assert_non_null(strstr(out, "refused: 1 "));
    free(out);
    cache_close(c);

    /* eviction: a cap of one byte evicts everything it may */
    c = cache_open(dir, 1);
    cache_key k2;
    make_key(&k2, IR2);
    assert_int_equal(cache_put(c, &k2, "other", 5, "src", "ll"), 0);
    expect_miss(c, &k2); /* evicted */
    assert_int_equal(count_files(elsewhere), before);
    /* clear: refuses the link (and says so), removes nothing there */
    assert_int_equal(cache_clear(c), -1);
    assert_int_equal(count_files(elsewhere), before);
    struct stat st;
    assert_int_equal(lstat(sub, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    cache_close(c);
    rm_rf(tmp);
    free(tmp);
}

/* In a child (the parent fails the test if it blocks): every reader meets a named pipe where the
 * entry should be, and refuses it without blocking. */
static int readers_meet_a_pipe(const char *dir)
{
    alarm(20);
    cache *c = cache_open(dir, 0);
    cache_key k;
    make_key(&k, IR1);
    void *got = NULL;
    size_t n;
    if (cache_get(c, &k, &got, &n) != 0) return 30;
    if (!cache_warning(c) || !strstr(cache_warning(c), "not a regular file")) return 31;
    char msg[1024];
    if (cache_explain(c, &k, msg, sizeof msg) != 0 || !strstr(msg, "not a regular file")) return 32;
    FILE *devnull = fopen("/dev/null", "w");
    if (cache_stats(c, devnull) != 0 || cache_list(c, devnull) < 0) return 33;
    fclose(devnull);
    cache_key k2;
    make_key(&k2, IR2); /* explain's search for the nearest entry also passes the pipe */
    if (cache_explain(c, &k2, msg, sizeof msg) != 0) return 34;
    if (cache_put(c, &k, "fresh", 5, NULL, NULL) != 0) return 35; /* our pipe is replaced */
    if (cache_get(c, &k, &got, &n) != 1 || n != 5) return 36;
    free(got);
    cache_close(c);
    return 0;
}

static void named_pipe_entry_never_blocks(void **state)
{
    (void)state;
    char *dir = tu_tempdir("trust-fifo");
    char bin[600];
    cache_key k;
    make_key(&k, IR1);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "obj", 3, "src", "ll"), 0);
    cache_close(c);
    entry_file(dir, IR1, "bin", bin);
    assert_int_equal(unlink(bin), 0);
    assert_int_equal(mkfifo(bin, 0600), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int rc = readers_meet_a_pipe(dir);
        free(dir);
        exit(rc);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st)) fail_msg("a reader blocked on the named pipe (killed by signal %d)", WTERMSIG(st));
    if (WEXITSTATUS(st)) fail_msg("child: exit %d", WEXITSTATUS(st));
    rm_rf(dir);
    free(dir);
}

/* cache_reject: an entry whose payload did not load is set aside as ID.bad, counted by stats,
 * named by the one warning; the next put stores a fresh entry; clear removes the .bad too. */
static void entry_that_did_not_load_is_set_aside(void **state)
{
    (void)state;
    char *dir = tu_tempdir("trust-reject");
    char bin[600], bad[600];
    cache_key k;
    make_key(&k, IR1);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "object for another cpu", 22, "src", "ll"), 0);
    expect_hit(c, &k, "object for another cpu");
    cache_reject(c, &k, "unsupported ELF machine");
    entry_file(dir, IR1, "bin", bin);
    entry_file(dir, IR1, "bad", bad);
    assert_int_equal(access(bin, F_OK), -1);
    assert_int_equal(access(bad, F_OK), 0);
    expect_miss(c, &k);
    expect_one_warning(c, &k, "did not load (unsupported ELF machine)");
    assert_non_null(strstr(cache_warning(c), bad));
    assert_int_equal(cache_put(c, &k, "good object", 11, "src", "ll"), 0);
    expect_hit(c, &k, "good object");
    char *out = stats_text(c);
    assert_non_null(strstr(out, "entries: 1 (0 damaged)"));
    assert_non_null(strstr(out, "failed to load: 1 "));
    assert_non_null(strstr(out, "1 failed to load"));
    free(out);
    cache_close(c);
    c = cache_open(dir, 0); /* a later run counts it too */
    out = stats_text(c);
    assert_non_null(strstr(out, "failed to load: 1 "));
    free(out);
    assert_int_equal(cache_clear(c), 1);
    assert_int_equal(access(bad, F_OK), -1);
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* A child that puts k's entry on trial and dies (here: _exit, as a SIGILL would end it) before it
 * ends the trial; returns the child's pid. */
static pid_t die_on_trial(const char *dir, const cache_key *k)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cache *c = cache_open(dir, 0);
        void *got = NULL;
        size_t n = 0;
        cache_trial t;
        if (cache_get(c, k, &got, &n) != 1) _exit(31);
        if (cache_trial_begin(c, k, got, n, &t) != 0) _exit(32);
        _exit(0); /* the code "crashed": the marker stays, unlocked */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) fail_msg("child: status %#x", st);
    return pid;
}

/* Trials (cache.h): an entry whose code killed the process that ran it is found by the next get
 * (a miss), set aside as ID.crash, named by the one warning, counted by stats, explained, and
 * replaced by the next put; an ended trial, a trial still running in a live process, and a
 * stale marker of an older payload all leave the entry a hit. */
static void entry_that_crashed_is_set_aside(void **state)
{
    (void)state;
    char *dir = tu_tempdir("trust-crash");
    char bin[600], crash[600], run[600], expected[1400], why[1024];
    cache_key k;
    make_key(&k, IR1);
    entry_file(dir, IR1, "bin", bin);
    entry_file(dir, IR1, "crash", crash);
    entry_file(dir, IR1, "run", run);
    char id[33];
    key_id(IR1, id);
    cache *c = cache_open(dir, 0);
    assert_int_equal(cache_put(c, &k, "object for a newer cpu", 22, "src", "ll"), 0);

    /* a trial that ends leaves nothing behind */
    cache_trial t;
    assert_int_equal(cache_trial_begin(c, &k, "object for a newer cpu", 22, &t), 0);
    assert_int_equal(access(run, F_OK), 0);
    /* while it runs (here, or in another process), the entry is a hit for others */
    cache *other = cache_open(dir, 0);
    expect_hit(other, &k, "object for a newer cpu");
    cache_trial t2;
    assert_int_equal(cache_trial_begin(other, &k, "object for a newer cpu", 22, &t2), -1);
    assert_int_equal(t2.fd, -1);
    cache_close(other);
    cache_trial_end(c, &t);
    assert_int_equal(access(run, F_OK), -1);
    expect_hit(c, &k, "object for a newer cpu");
    assert_null(cache_warning(c));

    /* a marker of an older payload (the entry was replaced since) is stale: removed, a hit */
    pid_t pid = die_on_trial(dir, &k);
    assert_int_equal(cache_put(c, &k, "other object", 12, "src", "ll"), 0);
    assert_int_equal(access(run, F_OK), 0);
    expect_hit(c, &k, "other object");
    assert_int_equal(access(run, F_OK), -1);
    assert_null(cache_warning(c));
    assert_int_equal(cache_put(c, &k, "object for a newer cpu", 22, "src", "ll"), 0);

    /* the process that ran it died on trial */
    pid = die_on_trial(dir, &k);
    assert_int_equal(cache_explain(c, &k, why, sizeof why), 0);
    snprintf(expected, sizeof expected, "miss: entry %s crashed the process that last ran it (pid "
             "%ld); the next run sets it aside and compiles afresh", id, (long)pid);
    assert_string_equal(why, expected);
    expect_miss(c, &k);
    snprintf(expected, sizeof expected, "kernel cache: entry %s crashed the process that last ran "
             "it (pid %ld); set aside as %s, compiled afresh", id, (long)pid, crash);
    assert_string_equal(cache_warning(c), expected);
    assert_int_equal(access(bin, F_OK), -1);
    assert_int_equal(access(run, F_OK), -1);
    assert_int_equal(access(crash, F_OK), 0);
    expect_one_warning(c, &k, "crashed the process that last ran it");
    char *out = stats_text(c);
    assert_non_null(strstr(out, "entries: 0 (0 damaged)"));
    assert_non_null(strstr(out, "\ncrashed: 1 (killed the process that ran them: set aside as "
                                "ID.crash and compiled afresh)\n"));
    assert_non_null(strstr(out, "0 failed to load, 1 crashed\n"));
    free(out);
    assert_int_equal(cache_put(c, &k, "good object", 11, "src", "ll"), 0);
    expect_hit(c, &k, "good object");
    cache_close(c);
    c = cache_open(dir, 0); /* a later run counts it too, and the fresh entry is a hit */
    expect_hit(c, &k, "good object");
    assert_null(cache_warning(c));
    out = stats_text(c);
    assert_non_null(strstr(out, "entries: 1 (0 damaged)"));
    assert_non_null(strstr(out, "\ncrashed: 1 "));
    free(out);
    assert_int_equal(cache_clear(c), 1);
    assert_int_equal(access(crash, F_OK), -1);
    cache_close(c);
    rm_rf(dir);
    free(dir);
}

/* In a child running as the folder's owner (nobody, when the test runs as root, for whom modes
 * do not stop writes): a folder made read-only while running turns the handle read-only with
 * one warning, and a folder read-only from the start still serves its entries. */
static int read_only_as_owner(const char *dir)
{
    if (geteuid() == 0 && (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)) return 40;
    cache_key k, k2;
    make_key(&k, IR1);
    make_key(&k2, IR2);
    void *got = NULL;
    size_t n;
    cache *c = cache_open(dir, 0);
    if (!cache_writable(c) || cache_warning(c)) return 41;
    if (cache_put(c, &k, "stored", 6, "src", "ll") != 0) return 42;
    /* made read-only while running: the next put fails and says so, once */
    if (chmod(dir, 0500) < 0) return 43;
    if (cache_put(c, &k2, "new", 3, "src", "ll") != -1) return 44;
    const char *w = cache_warning(c);
    if (!w || !strstr(w, "read-only") || !strstr(w, "Permission denied")) return 45;
    if (cache_put(c, &k2, "new", 3, "src", "ll") != -1 || cache_warning(c) != w) return 46;
    if (cache_get(c, &k, &got, &n) != 1 || n != 6) return 47; /* hits still served */
    free(got);
    if (cache_writable(c) || !cache_on_disk(c)) return 48;
    cache_close(c);
    /* read-only from the start */
    c = cache_open(dir, 0);
    w = cache_warning(c);
    if (!w || !strstr(w, "kernel cache is read-only") || !strstr(w, dir)) return 49;
    if (cache_get(c, &k, &got, &n) != 1 || n != 6 || memcmp(got, "stored", 6)) return 50;
    free(got);
    if (cache_put(c, &k2, "new", 3, "src", "ll") != -1) return 51;
    if (cache_get(c, &k2, &got, &n) != 0) return 52;
    if (cache_warning(c) != w) return 53;
    cache_close(c);
    return 0;
}

static void read_only_folder_serves_hits(void **state)
{
    (void)state;
    char *tmp = tu_tempdir("trust-ro");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    assert_int_equal(mkdir(dir, 0700), 0);
    if (geteuid() == 0) {
        assert_int_equal(chmod(tmp, 0711), 0); /* nobody may pass through to the folder */
        assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
    }
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int rc = read_only_as_owner(dir);
        free(tmp);
        exit(rc);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) fail_msg("child: status %#x", st);
    char cmd[700], *out = NULL;
    snprintf(cmd, sizeof cmd, "find '%s' -type f | wc -l", dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_string_equal(out, "3\n"); /* the one entry (bin, key, ll): nothing else was written */
    free(out);
    rm_rf(tmp);
    free(tmp);
}

int main(void)
{
    unsetenv("PDEJIT_CACHE_MAX");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(folders_and_files_are_private),
        cmocka_unit_test(folder_writable_by_others_is_refused),
        cmocka_unit_test(planted_entry_of_another_user_is_refused),
        cmocka_unit_test(group_writable_entry_is_refused_and_replaced),
        cmocka_unit_test(symlinked_entry_is_not_followed),
        cmocka_unit_test(symlinked_sub_folder_is_never_followed),
        cmocka_unit_test(named_pipe_entry_never_blocks),
        cmocka_unit_test(entry_that_did_not_load_is_set_aside),
        cmocka_unit_test(entry_that_crashed_is_set_aside),
        cmocka_unit_test(read_only_folder_serves_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
