/* watch.h — `pdejit run --watch`: hot swap of a running simulation when its file changes. */
#ifndef PJ_WATCH_H
#define PJ_WATCH_H
#include "cpu_backend.h"
#include "program.h"
#include "sim.h"

typedef struct watch watch;

/* Watches `path` for the run of s; *be is the CPU back end in use (NULL: the interpreter), which
 * a swap replaces. The problem is recompiled with copt off the stepping thread. */
/* The file's state before it was read for the run: an edit made while the run was starting
 * counts as a change. */
typedef struct watch_baseline { long long sec, nsec, size; int ok; } watch_baseline;
watch_baseline watch_baseline_of(const char *path);

watch *watch_create(const char *path, const watch_baseline *base, sim *s, cpu_backend **be,
                    const cpu_backend_options *bo, const pj_compile_options *copt);
/* driver_options.between_steps: polls the file, and swaps at this step boundary once a new
 * definition has compiled. Reports to stderr; never stops the run. */
void watch_between_steps(void *w);
/* Waits for a compile in flight; frees the programs the watch made (after the sim and back
 * end that used them are gone). */
void watch_free(watch *w);

#endif
