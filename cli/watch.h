/* watch.h — `pdejit run --watch`: hot swap of a running simulation when its file changes. */
#ifndef PJ_WATCH_H
#define PJ_WATCH_H
#include "engine.h"
#include "program.h"

typedef struct watch watch;

/* The file's state before it was read for the run: an edit made while the run was starting
 * counts as a change. */
typedef struct watch_baseline { long long sec, nsec, size; int ok; } watch_baseline;
watch_baseline watch_baseline_of(const char *path);

/* Watches `path` for the run of e (a back end that can swap: engine_can_swap). The problem is
 * recompiled with copt, and its kernels prepared, off the stepping thread. */
watch *watch_create(const char *path, const watch_baseline *base, engine *e, const pj_compile_options *copt);
/* driver_options.between_steps: polls the file, and swaps at this step boundary once a new
 * definition has compiled. Reports to stderr; never stops the run. */
void watch_between_steps(void *w);
/* Waits for a compile in flight; frees the programs the watch made (after the engine that used
 * them is gone). */
void watch_free(watch *w);

#endif
