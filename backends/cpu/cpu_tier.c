/* cpu_tier.c — the final tier's background compile (see cpu_tier.h). */
#include "cpu_tier.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

struct cpu_tier {
    cpu_tier_job *jobs;
    int n, cap;
    double up_ms;     /* stepping time before the tier-up; < 0 never */
    double t_first;   /* when the first step returned, 0 before */
    llvm_jit *jit;
    pthread_t th;
    int started;      /* 1 while a thread is to be joined */
    atomic_int done;  /* set by the thread when every job is compiled */
    int finished;     /* the jobs were handed out */
    atomic_int *stop; /* cpu_tier_stop_at: set, the kernels are about to be replaced, or NULL */
};

cpu_tier *cpu_tier_create(int cap)
{
    cpu_tier *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->jobs = calloc(cap > 0 ? (size_t)cap : 1, sizeof *t->jobs);
    if (!t->jobs) {
        free(t);
        return NULL;
    }
    t->cap = cap;
    t->up_ms = CPU_TIER_UP_MS;
    const char *e = getenv("PDEJIT_TIER_UP_MS");
    if (e && *e) t->up_ms = atof(e);
    atomic_init(&t->done, 0);
    return t;
}

void cpu_tier_destroy(cpu_tier *t)
{
    if (!t) return;
    if (t->started) pthread_join(t->th, NULL);
    for (int i = 0; i < t->n; i++) {
        free(t->jobs[i].ir);
        free(t->jobs[i].obj);
        kir_free(t->jobs[i].k);
    }
    free(t->jobs);
    free(t);
}

void cpu_tier_stop_at(cpu_tier *t, atomic_int *stop)
{
    if (t) t->stop = stop;
}

int cpu_tier_busy(cpu_tier *t) { return t && t->started && !atomic_load(&t->done); }

/* k's values that point to `from` point to `to` instead (a key keeps its caller's strings). */
static void repoint(cache_key *k, const char *from, const char *to)
{
    for (int i = 0; i < k->n; i++)
        if (k->values[i] == from) k->values[i] = to;
}

int cpu_tier_add(cpu_tier *t, int slot, const kir_kernel *k, const llvm_options *lo, const char *symbol,
                 const cache_key *key, const char *ir_hash)
{
    if (t->n == t->cap) return -1;
    cpu_tier_job *j = &t->jobs[t->n];
    memset(j, 0, sizeof *j);
    if (!(j->k = kir_clone(k))) return -1;
    t->n++;
    j->slot = slot;
    j->lo = *lo;
    j->lo.lsr = 1;
    snprintf(j->symbol, sizeof j->symbol, "%s", symbol);
    snprintf(j->ir_hash, sizeof j->ir_hash, "%s", ir_hash);
    j->key = *key;
    repoint(&j->key, ir_hash, j->ir_hash);
    j->rc = -1;
    return 0;
}

/* The background thread: every job with its IR, one after the other (a second core at most). */
static void *compile_all(void *arg)
{
    cpu_tier *t = arg;
    for (int i = 0; i < t->n; i++) {
        cpu_tier_job *j = &t->jobs[i];
        char err[256];
        if (t->stop && atomic_load(t->stop)) { /* a swap replaces them: no core spent on them */
            j->rc = -1;
            continue;
        }
        j->rc = llvm_compile(t->jit, j->k, &j->lo, j->symbol, &j->obj, &j->len, &j->ir, NULL, err, sizeof err);
    }
    atomic_store(&t->done, 1);
    return NULL;
}

cpu_tier_job *cpu_tier_poll(cpu_tier *t, llvm_jit *jit, int *n)
{
    *n = 0;
    if (!t || t->finished || !t->n || t->up_ms < 0) return NULL;
    if (!t->started) {
        if (t->stop && atomic_load(t->stop)) {
            t->finished = 1;
            return NULL;
        }
        double now = driver_now() * 1e3;
        if (t->t_first == 0) t->t_first = now;
        if (now - t->t_first < t->up_ms) return NULL;
        t->jit = jit;
        t->started = pthread_create(&t->th, NULL, compile_all, t) == 0;
        if (!t->started) t->finished = 1; /* no thread: stay at the quick tier */
        return NULL;
    }
    if (!atomic_load(&t->done)) return NULL;
    pthread_join(t->th, NULL);
    t->started = 0;
    t->finished = 1;
    *n = t->n;
    return t->jobs;
}

cpu_tier_job *cpu_tier_join(cpu_tier *t, int *n)
{
    *n = 0;
    if (!t || !t->started) return NULL;
    pthread_join(t->th, NULL);
    t->started = 0;
    t->finished = 1;
    *n = t->n;
    return t->jobs;
}
