/* driver.h — a whole run: steps to the end time landing exactly on every output time,
 * snapshots, NaN/Inf checks, progress on long runs, the final CSV dump. */
#ifndef PJ_DRIVER_H
#define PJ_DRIVER_H
#include <stdio.h>
#include "engine.h"
#include "sim.h"
#include "writers.h"

typedef struct driver_options {
    double dt;              /* > 0 */
    double until;           /* end time (steps * dt when the run is given in steps) */
    int64_t steps;          /* >= 0: exactly this many steps of dt (until ignored) */
    double output_every;    /* <= 0: snapshots only at the start and the end */
    const char *out_dir;    /* NULL: no snapshots */
    int formats;            /* PJ_FMT_* */
    const int *fields;      /* fields written in snapshots */
    int n_fields;
    const char *dump_path;  /* NULL: no final dump */
    int check_every;        /* steps between NaN/Inf checks (>= 1) */
    FILE *progress;         /* NULL: quiet; else a line every few seconds on long runs */
    void (*between_steps)(void *ctx); /* NULL, or called after every step (hot swap) */
    void *between_ctx;
} driver_options;

typedef struct driver_result {
    int64_t steps;
    double t;
    double seconds;         /* wall time of the stepping (outputs excluded) */
    int snapshots;
} driver_result;

/* Runs e (initialised) to the end. Returns 0; 1 when the run failed (a non-finite value, a
 * device error, an output that could not be written): the reason is in err. */
int driver_run(engine *e, const driver_options *o, driver_result *res, char *err, size_t err_len);

/* Formats a NaN report as "non-finite value (nan) in field u at cell (3, 4), x = 0.35, y = 0.45,
 * at step 12, t = 0.12". */
void driver_describe_nan(const pj_program *p, const sim_nan_report *r, char *out, size_t len);

double driver_now(void); /* monotonic seconds */

#endif
