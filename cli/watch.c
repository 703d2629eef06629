/* watch.c — hot swap (see watch.h).
 *
 * Every 0.2 s of wall time (or every $PDEJIT_WATCH_STEPS steps, which also makes the swap
 * synchronous: for tests) the step loop stats the file, and when its size and mtime are the same
 * reads it and compares its content's hash (XXH3) with the last one read, so that an edit that
 * keeps both is seen too; a new size or time with the text last read (a save without an edit, a
 * time stamp the file system changed again) is no change, so an edit is reported once. Only a
 * regular file of at most WATCH_MAX_BYTES is read, opened without blocking: a named pipe, a device
 * or a bigger file in its place is reported once and the run goes on (a pipe would block the
 * reading thread, and with it the end of the run; /dev/zero would fill the memory). A change
 * starts a thread that reads and compiles it — front end and the back end's kernels
 * (pj_sim_swap, through the cache) — while the simulation keeps stepping; pj_sim_swap hands the
 * new definition to the stepping thread, which takes it at its next step boundary; the fields
 * keep their state; a file that does not compile, or changes what a running simulation cannot change (the
 * mesh, the fields, the params, the scheme), is reported against the new text and the previous
 * definition goes on running.
 *
 * Over MPI (a decomposed simulation) rank 0 alone watches the file; at every step boundary it
 * tells the others whether the file changed, then sends the new text (or that it cannot be
 * read); every process compiles it and swaps it in at that same step (pj_sim_swap is collective
 * there: rank 0 compiles the kernels into the cache, the others load them), synchronously on the
 * stepping thread. Rank 0 alone reports, with the messages of one process. */
#include "watch.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include "cli.h"
#include "driver.h"
#include "knobs.h"

/* The largest file --watch reads. */
#define WATCH_MAX_BYTES ((off_t)64 << 20)

struct watch {
    char *path;
    pj_sim *sim;
    const char *scheme;         /* --scheme, or NULL */
    struct timespec mtime;
    off_t size;
    unsigned long long hash;    /* XXH3 of the content last read */
    int hashed;                 /* hash is known */
    double last_poll;
    long every_steps;           /* $PDEJIT_WATCH_STEPS, 0: by wall time */
    long steps;
    int processes, rank;        /* over MPI: rank 0 watches, every process swaps */
    /* the compile in flight */
    pthread_t thread;
    int busy;
    atomic_int done;
    int swapped;                /* the new definition runs */
    int refused;                /* it compiled, but the simulation could not take it (err says why) */
    double t_swap;
    char *log;                  /* diagnostics of the new text */
    char err[1024];
    double ms;
    int compiled, cached;
    /* the problem swapped in last, which the simulation runs: the one before it is freed once it
       is replaced, so that memory stays bounded however many swaps a run makes */
    pj_problem *current;
};

static int file_state(const char *path, struct timespec *mtime, off_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    *mtime = st.st_mtim;
    *size = st.st_size;
    return 0;
}

/* Why the file at path is not read, in "FILE changed but ...": NULL when it is a regular file of
 * at most WATCH_MAX_BYTES (st describes it). */
static const char *not_readable(const struct stat *st, char *why, size_t len)
{
    if (!S_ISREG(st->st_mode)) return "it is not a regular file";
    if (st->st_size > WATCH_MAX_BYTES) {
        snprintf(why, len, "it is %lld bytes, more than the %lld (64 MiB) --watch reads", (long long)st->st_size,
                 (long long)WATCH_MAX_BYTES);
        return why;
    }
    return NULL;
}

/* The text of a regular file of at most WATCH_MAX_BYTES, opened without blocking (a pipe put in
 * its place is not waited for); NULL with the reason in why. */
static char *read_regular(const char *path, size_t *len, char *why, size_t why_len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char reason[160];
    const char *bad = fstat(fd, &st) != 0 ? strerror(errno) : not_readable(&st, reason, sizeof reason);
    if (bad) {
        snprintf(why, why_len, "%s", bad);
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0; /* one more: a file that grew meanwhile is seen */
    char *text = malloc(cap + 1);
    ssize_t r = 0;
    while (text && n < cap && (r = read(fd, text + n, cap - n)) > 0) n += (size_t)r;
    int e = errno;
    close(fd);
    if (!text || r < 0) {
        snprintf(why, why_len, "%s: %s", path, text ? strerror(e) : "out of memory");
        free(text);
        return NULL;
    }
    if (n == cap && (off_t)n > WATCH_MAX_BYTES) { /* it grew past the limit while being read */
        snprintf(why, why_len, "it is more than the %lld (64 MiB) bytes --watch reads", (long long)WATCH_MAX_BYTES);
        free(text);
        return NULL;
    }
    text[n] = 0;
    *len = n;
    return text;
}

static unsigned long long content_hash(const char *text, size_t len)
{
    return (unsigned long long)XXH3_64bits(text, len);
}

watch_baseline watch_baseline_of(const char *path)
{
    watch_baseline b = {0, 0, 0, 0, 0, 0};
    struct timespec m;
    off_t size;
    if (file_state(path, &m, &size) == 0) b = (watch_baseline){m.tv_sec, m.tv_nsec, size, 0, 0, 1};
    char why[256];
    size_t len;
    char *text = read_regular(path, &len, why, sizeof why);
    if (text) {
        b.hash = content_hash(text, len);
        b.hashed = 1;
    }
    free(text);
    return b;
}

watch *watch_create(const char *path, const watch_baseline *base, pj_sim *sim, const char *scheme)
{
    watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->path = strdup(path);
    w->sim = sim;
    w->scheme = scheme;
    if (base && base->ok) {
        w->mtime.tv_sec = (time_t)base->sec;
        w->mtime.tv_nsec = (long)base->nsec;
        w->size = (off_t)base->size;
        w->hash = base->hash;
        w->hashed = base->hashed;
    } else {
        file_state(path, &w->mtime, &w->size);
    }
    w->last_poll = driver_now();
    w->every_steps = (long)knob_int(KNOB_WATCH_STEPS, 0);
    w->processes = pj_sim_processes(sim);
    w->rank = pj_sim_rank(sim);
    return w;
}

/* Compiles text (NULL: it could not be read, w->err says why; freed here) and hands it to the
 * simulation. */
static void compile_text(watch *w, char *text, size_t len, double t0)
{
    pj_problem *next = NULL;
    if (text) {
        w->hash = content_hash(text, len);
        w->hashed = 1;
        if (pj_problem_compile_scheme(w->path, text, len, w->scheme, &next, &w->log) != PJ_OK)
            snprintf(w->err, sizeof w->err, "it does not compile");
        free(text);
    }
    if (next) {
        char why[512];
        pj_status st = pj_sim_swap(w->sim, next, &w->t_swap, why, sizeof why);
        if (st == PJ_OK) {
            /* replaced at a step boundary: nothing refers to it any more (the run's own options
               point into the problem it started with, which is not the watch's) */
            pj_problem_free(w->current);
            w->current = next;
            w->swapped = 1;
            pj_sim_info info;
            pj_sim_get_info(w->sim, &info);
            w->cached = info.from_cache;
            w->compiled = info.kernels - info.from_cache;
        } else {
            snprintf(w->err, sizeof w->err, "%s%s", why, st == PJ_ERR_INPUT ? ": restart the run for that" : "");
            w->refused = 1;
            pj_problem_free(next);
        }
    }
    w->ms = (driver_now() - t0) * 1e3;
}

/* On the watch thread (or synchronously): compile the file and hand it to the simulation. */
static void *compile_new(void *arg)
{
    watch *w = arg;
    double t0 = driver_now();
    size_t len = 0;
    char *text = read_regular(w->path, &len, w->err, sizeof w->err);
    compile_text(w, text, len, t0);
    atomic_store(&w->done, 1);
    return NULL;
}

/* On the stepping thread, once the compile is done: say what happened. */
static void report(watch *w)
{
    if (w->rank != 0) {
        /* over MPI rank 0 alone says it */
    } else if (w->swapped) {
        if (w->compiled + w->cached)
            fprintf(stderr, "pdejit: t = %.6g: %s changed: swapped in the new definition (%d kernel%s compiled, %d "
                    "from the cache, ready in %.1f ms)\n", w->t_swap, w->path, w->compiled,
                    w->compiled == 1 ? "" : "s", w->cached, w->ms);
        else
            fprintf(stderr, "pdejit: t = %.6g: %s changed: swapped in the new definition (ready in %.1f ms)\n",
                    w->t_swap, w->path, w->ms);
    } else if (w->refused) {
        fprintf(stderr, "pdejit: t = %.6g: %s changed, but %s; still running the previous definition\n",
                pj_sim_time(w->sim), w->path, w->err);
    } else {
        fprintf(stderr, "pdejit: t = %.6g: %s changed but %s; still running the previous definition\n%s",
                pj_sim_time(w->sim), w->path, w->err, w->log ? w->log : "");
    }
    free(w->log);
    w->log = NULL;
    w->swapped = w->refused = 0;
    w->compiled = w->cached = 0;
    w->err[0] = 0;
}

/* Polls the file when due: 1 when it changed (to be read and compiled), 0 when not (or not yet
 * time to look), -1 when it changed into something not to be read (w->err says why). */
static int poll_file(watch *w)
{
    if (w->every_steps > 0) {
        if (w->steps % w->every_steps) return 0;
    } else {
        double now = driver_now();
        if (now - w->last_poll < 0.2) return 0;
        w->last_poll = now;
    }
    struct stat st;
    if (stat(w->path, &st) != 0) return 0; /* being replaced by an editor: next time */
    char reason[160];
    const char *bad = not_readable(&st, reason, sizeof reason);
    if (st.st_mtim.tv_sec == w->mtime.tv_sec && st.st_mtim.tv_nsec == w->mtime.tv_nsec && st.st_size == w->size) {
        /* the same size and time: the same content? (a file not to be read was said already) */
        if (bad) return 0;
        size_t len;
        char why[256];
        char *text = read_regular(w->path, &len, why, sizeof why);
        if (!text) return 0;
        unsigned long long h = content_hash(text, len);
        free(text);
        int known = w->hashed, same = known && h == w->hash;
        w->hash = h;
        w->hashed = 1;
        if (same || !known) return 0; /* unknown before: this is the first look, not a change */
    } else if (!bad && w->hashed) { /* a new size or time, the text last read: saved, not changed */
        size_t len;
        char why[256];
        char *text = read_regular(w->path, &len, why, sizeof why);
        int same = text && content_hash(text, len) == w->hash;
        free(text);
        if (same) {
            w->mtime = st.st_mtim;
            w->size = st.st_size;
            return 0;
        }
    }
    w->mtime = st.st_mtim;
    w->size = st.st_size;
    if (bad) { /* said once, until it changes again; then the text it had is new again */
        snprintf(w->err, sizeof w->err, "%s", bad);
        w->hashed = 0;
        return -1;
    }
    return 1;
}

/* Over MPI, at every step boundary on every process: rank 0 polls and sends what it found (a
 * header, then the text), every process compiles and swaps at this step. */
static void between_steps_mpi(watch *w)
{
    struct { long long state, len; char err[sizeof w->err]; } head;
    memset(&head, 0, sizeof head);
    char *text = NULL;
    double t0 = driver_now();
    if (w->rank == 0) {
        head.state = poll_file(w);
        if (head.state == 1) {
            size_t len = 0;
            text = read_regular(w->path, &len, w->err, sizeof w->err);
            head.len = text ? (long long)len : -1;
        }
        snprintf(head.err, sizeof head.err, "%s", w->err);
    }
    /* every step: 0 no change (the common case, one small message) */
    pj_sim_broadcast(w->sim, &head.state, sizeof head.state);
    if (!head.state) return;
    pj_sim_broadcast(w->sim, &head, sizeof head);
    snprintf(w->err, sizeof w->err, "%s", head.err);
    if (head.state < 0) {
        report(w);
        return;
    }
    if (head.len >= 0) { /* the text, in pieces (a process short of memory still takes part) */
        static char scratch[1 << 16];
        if (w->rank != 0) text = malloc((size_t)head.len + 1);
        for (long long at = 0; at < head.len; at += (long long)sizeof scratch) {
            size_t n = head.len - at < (long long)sizeof scratch ? (size_t)(head.len - at) : sizeof scratch;
            pj_sim_broadcast(w->sim, text ? text + at : scratch, n);
        }
        if (text) text[head.len] = 0;
        if (pj_sim_any(w->sim, !text)) { /* one process without the text: none swaps */
            free(text);
            text = NULL;
            snprintf(w->err, sizeof w->err, "out of memory");
        }
    }
    compile_text(w, text, head.len >= 0 ? (size_t)head.len : 0, t0);
    report(w);
}

void watch_between_steps(void *ctx)
{
    watch *w = ctx;
    w->steps++;
    if (w->processes > 1) {
        between_steps_mpi(w);
        return;
    }
    if (w->busy) {
        if (!atomic_load(&w->done)) return;
        pthread_join(w->thread, NULL);
        w->busy = 0;
        report(w);
        return;
    }
    int changed = poll_file(w);
    if (changed < 0) report(w);
    if (changed <= 0) return;
    atomic_store(&w->done, 0);
    if (w->every_steps > 0 || pthread_create(&w->thread, NULL, compile_new, w) != 0) {
        compile_new(w); /* synchronous: tests, or no thread to be had */
        report(w);
        return;
    }
    w->busy = 1;
}

void watch_finish(watch *w)
{
    if (!w || !w->busy) return;
    pthread_join(w->thread, NULL);
    w->busy = 0;
    report(w);
}

void watch_stop(watch *w)
{
    if (!w || !w->busy) return;
    pthread_join(w->thread, NULL);
    w->busy = 0;
    free(w->log);
    w->log = NULL;
}

void watch_free(watch *w)
{
    if (!w) return;
    watch_stop(w);
    pj_problem_free(w->current);
    free(w->path);
    free(w);
}
