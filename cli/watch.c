/* watch.c — hot swap (see watch.h).
 *
 * Every 0.2 s of wall time (or every $PDEJIT_WATCH_STEPS steps, which also makes the swap
 * synchronous: for tests) the step loop stats the file. A change starts a thread that reads
 * and compiles it — front end and the back end's kernels (engine_prepare, through the cache) —
 * while the simulation keeps stepping. At the first step boundary after the thread is done, the
 * new definition is swapped in (engine_swap), the fields keep their
 * state; a file that does not compile, or changes what a running simulation cannot change (the
 * mesh, the fields, the params, the scheme), is reported against the new text and the previous
 * definition goes on running. */
#include "watch.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "driver.h"

struct watch {
    char *path;
    engine *e;
    pj_compile_options copt;
    struct timespec mtime;
    off_t size;
    double last_poll;
    long every_steps;           /* $PDEJIT_WATCH_STEPS, 0: by wall time */
    long steps;
    /* the compile in flight */
    pthread_t thread;
    int busy;
    atomic_int done;
    pj_program *next;
    void *prepared;             /* next's kernels */
    char *log;                  /* diagnostics of the new text */
    char err[1024];
    double ms;
    int compiled, cached;
    /* every program swapped in: freed at the end (names may still be read until then) */
    pj_program **owned;
    int n_owned;
};

static int file_state(const char *path, struct timespec *mtime, off_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    *mtime = st.st_mtim;
    *size = st.st_size;
    return 0;
}

watch_baseline watch_baseline_of(const char *path)
{
    watch_baseline b = {0, 0, 0, 0};
    struct timespec m;
    off_t size;
    if (file_state(path, &m, &size) == 0) b = (watch_baseline){m.tv_sec, m.tv_nsec, size, 1};
    return b;
}

watch *watch_create(const char *path, const watch_baseline *base, engine *e, const pj_compile_options *copt)
{
    watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->path = strdup(path);
    w->e = e;
    if (copt) w->copt = *copt;
    if (base && base->ok) {
        w->mtime.tv_sec = (time_t)base->sec;
        w->mtime.tv_nsec = (long)base->nsec;
        w->size = (off_t)base->size;
    } else {
        file_state(path, &w->mtime, &w->size);
    }
    w->last_poll = driver_now();
    const char *every = getenv("PDEJIT_WATCH_STEPS");
    w->every_steps = every ? atol(every) : 0;
    return w;
}

static void *compile_new(void *arg)
{
    watch *w = arg;
    double t0 = driver_now();
    FILE *f = fopen(w->path, "rb");
    char *text = NULL;
    size_t len = 0;
    if (f) {
        size_t cap = 1 << 16, r;
        text = malloc(cap + 1);
        while (text && (r = fread(text + len, 1, cap - len, f)) > 0) {
            len += r;
            if (len == cap) {
                char *t = realloc(text, 2 * cap + 1);
                if (!t) break;
                text = t;
                cap *= 2;
            }
        }
        fclose(f);
    }
    if (!text) {
        snprintf(w->err, sizeof w->err, "%s: cannot read it", w->path);
    } else {
        text[len] = 0;
        diag d;
        diag_init(&d, w->path, text, len);
        w->next = compile_problem(w->path, text, len, &d, &w->copt);
        if (d.log) w->log = strdup(d.log);
        diag_free(&d);
        free(text);
        if (!w->next) snprintf(w->err, sizeof w->err, "it does not compile");
    }
    if (w->next) {
        engine_info info;
        w->prepared = engine_prepare(w->e, w->next, &info, w->err, sizeof w->err);
        if (!w->prepared) {
            program_free(w->next);
            w->next = NULL;
        } else {
            w->cached = info.from_cache;
            w->compiled = info.n_kernels - info.from_cache;
        }
    }
    w->ms = (driver_now() - t0) * 1e3;
    atomic_store(&w->done, 1);
    return NULL;
}

/* At a step boundary, with the compile done: swap, or say why not. */
static void apply(watch *w)
{
    double t = engine_time(w->e);
    if (!w->next) {
        fprintf(stderr, "pdejit: t = %.6g: %s changed but %s; still running the previous definition\n%s", t, w->path,
                w->err, w->log ? w->log : "");
    } else {
        char why[512];
        if (engine_swap(w->e, w->next, w->prepared, why, sizeof why) < 0) { /* releases the kernels */
            fprintf(stderr, "pdejit: t = %.6g: %s changed, but %s: restart the run for that; still running the previous "
                    "definition\n", t, w->path, why);
            program_free(w->next);
        } else {
            pj_program **o = realloc(w->owned, sizeof *o * (size_t)(w->n_owned + 1));
            if (o) {
                w->owned = o;
                w->owned[w->n_owned++] = w->next;
            }
            if (w->compiled + w->cached)
                fprintf(stderr, "pdejit: t = %.6g: %s changed: swapped in the new definition (%d kernel%s compiled, %d "
                        "from the cache, ready in %.1f ms)\n", t, w->path, w->compiled, w->compiled == 1 ? "" : "s",
                        w->cached, w->ms);
            else
                fprintf(stderr, "pdejit: t = %.6g: %s changed: swapped in the new definition (ready in %.1f ms)\n", t,
                        w->path, w->ms);
        }
    }
    free(w->log);
    w->log = NULL;
    w->next = NULL;
    w->prepared = NULL;
    w->compiled = w->cached = 0;
    w->err[0] = 0;
}

void watch_between_steps(void *ctx)
{
    watch *w = ctx;
    w->steps++;
    if (w->busy) {
        if (!atomic_load(&w->done)) return;
        pthread_join(w->thread, NULL);
        w->busy = 0;
        apply(w);
        return;
    }
    if (w->every_steps > 0) {
        if (w->steps % w->every_steps) return;
    } else {
        double now = driver_now();
        if (now - w->last_poll < 0.2) return;
        w->last_poll = now;
    }
    struct timespec m;
    off_t size;
    if (file_state(w->path, &m, &size) < 0) return; /* being replaced by an editor: next time */
    if (m.tv_sec == w->mtime.tv_sec && m.tv_nsec == w->mtime.tv_nsec && size == w->size) return;
    w->mtime = m;
    w->size = size;
    atomic_store(&w->done, 0);
    if (w->every_steps > 0 || pthread_create(&w->thread, NULL, compile_new, w) != 0) {
        compile_new(w); /* synchronous: tests, or no thread to be had */
        apply(w);
        return;
    }
    w->busy = 1;
}

void watch_free(watch *w)
{
    if (!w) return;
    if (w->busy) {
        pthread_join(w->thread, NULL);
        engine_release(w->e, w->prepared);
        program_free(w->next);
        free(w->log);
    }
    for (int i = 0; i < w->n_owned; i++) program_free(w->owned[i]);
    free(w->owned);
    free(w->path);
    free(w);
}
