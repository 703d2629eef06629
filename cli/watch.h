/* watch.h — `pdejit run --watch`: hot swap of a running simulation when its file changes. */
#ifndef PJ_WATCH_H
#define PJ_WATCH_H
#include "pdejit.h"

typedef struct watch watch;

/* The file's state before it was read for the run: an edit made while the run was starting
 * counts as a change. hash: XXH3 of its content (hashed = 1 when it could be read). */
typedef struct watch_baseline {
    long long sec, nsec, size;
    unsigned long long hash;
    int hashed;
    int ok;
} watch_baseline;
watch_baseline watch_baseline_of(const char *path);

/* Watches `path` for the run of sim (a back end that can swap: pj_sim_can_swap). The problem is
 * recompiled (with `scheme` when not NULL), and its kernels prepared, off the stepping thread. */
watch *watch_create(const char *path, const watch_baseline *base, pj_sim *sim, const char *scheme);
/* driver_options.between_steps: polls the file, and swaps at this step boundary once a new
 * definition has compiled. Reports to stderr; never stops the run. */
void watch_between_steps(void *w);
/* When the run has ended: waits for a compile in flight and says what became of it (a swap the
 * run ended soon after, before the next step boundary could report it, is said too). */
void watch_finish(watch *w);
/* Waits for a compile in flight (before the simulation is freed). */
void watch_stop(watch *w);
/* Waits for a compile in flight; frees the problem the watch swapped in last (after the
 * simulation that ran it is gone; each earlier one was freed when the next replaced it). */
void watch_free(watch *w);

#endif
