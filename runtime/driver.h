/* driver.h — a whole run: steps to the end time landing exactly on every output time,
 * snapshots, NaN/Inf checks, progress on long runs, the final CSV dump. */
#ifndef PJ_DRIVER_H
#define PJ_DRIVER_H
#include <stdatomic.h>
#include <stdio.h>
#include "engine.h"
#include "state.h"
#include "writers.h"

typedef struct driver_options {
    double dt;              /* > 0 */
    double until;           /* end time (steps * dt when the run is given in steps) */
    int64_t steps;          /* >= 0: exactly this many steps of dt (until ignored) */
    double output_every;    /* <= 0: snapshots only at the start and the end */
    const double *output_at;/* n_output_at increasing times: snapshots at exactly these (not at the
                               start and the end unless listed), output_every ignored */
    int n_output_at;
    const char *out_dir;    /* NULL: no snapshots, no monitor.csv */
    int no_snapshots;       /* out_dir takes monitor.csv only */
    int formats;            /* PJ_FMT_* */
    writers_png_style png;  /* the PNG frames' colour map and scale */
    const int *fields;      /* fields written in snapshots */
    int n_fields;
    const char *dump_path;  /* NULL: no final dump */
    int check_every;        /* steps between NaN/Inf checks (>= 1) */
    FILE *progress;         /* NULL: quiet; else a line every few seconds on long runs */
    void (*between_steps)(void *ctx); /* NULL, or called after every step (hot swap) */
    void *between_ctx;
    /* NULL, or called at every output time before the run goes on (the explicit stability check
       again, runtime/api.c): nonzero ends the run as failed with the reason in err */
    int (*at_output)(void *ctx, char *err, size_t len);
    int adaptive;           /* the engine chooses its steps (implicit schemes with adapt): one
                               engine_step per span between stops */
    atomic_int *interrupt;  /* NULL, or a flag that, once set (any thread, a signal handler), stops
                               the run at the next step boundary; the run clears it */
    FILE *monitor_out;      /* NULL, or each monitor row printed here (--verbose) */
    /* NULL, or called with each monitor row (rank 0); nonzero: stop as o->interrupt does */
    int (*on_monitor)(void *ctx, double t, int64_t step, int n, const char *const *names, const double *values);
    void *monitor_ctx;
    /* NULL, or called (rank 0) before the first step, every progress_seconds of wall time at a step
       boundary, and at the end; nonzero: stop as o->interrupt does */
    int (*on_progress)(void *ctx, double t, double t_end, int64_t steps);
    void *progress_ctx;
    double progress_seconds;
    int no_monitors;        /* the program's monitors are not taken (pj_sim_advance) */
    double monitor_every;   /* the program's, for driver_check_counts (driver_run reads the program) */
    /* restarts (checkpoint.h) */
    double checkpoint_every;/* > 0: a checkpoint into checkpoint_dir at the first step boundary at
                               or after each multiple of it (the steps are not changed for it) */
    const char *checkpoint_dir;
    uint64_t seed;          /* recorded in checkpoints */
    int single;
    int resumed;            /* the engine holds a checkpoint's state: no first snapshot, outputs
                               from the first output time after its time, the series in out_dir
                               goes on (writers_series_resume) instead of being cleaned */
} driver_options;

/* The most steps and output times one run may take: beyond them a time step or an output
 * interval has underflowed (or the end overflowed), and the run would take 0 steps or never end. */
#define DRIVER_MAX_STEPS 1e15
#define DRIVER_MAX_OUTPUTS 1e7

typedef struct driver_result {
    int64_t steps;
    double t;
    double seconds;         /* wall time of the stepping (outputs excluded) */
    int snapshots;
    char stopped[256];      /* "" or why `stop when` ended the run: "peak < 0.01 at t = 0.35 (step 350)" */
} driver_result;

/* Checks, before anything runs, that the run from t_now ends at a finite time, within
 * DRIVER_MAX_STEPS steps and DRIVER_MAX_OUTPUTS output times, with steps that move the time:
 * 0, or -1 with a message naming the numbers ("dt = 1e-300 to t = 1 makes 1e+300 steps, more
 * than the 1e+15 a run may take"). */
int driver_check_counts(const driver_options *o, double t_now, char *err, size_t err_len);

/* Checks, before the first step, that the outputs can be written: the dump's folder takes a
 * file, out_dir is created and takes files. The snapshots a previous series left in out_dir
 * (writers_series_clean's names only) are removed: *cleaned receives how many. 0, or -1 with a
 * message ("cannot write the dump missing/x.csv: No such file or directory"). */
int driver_prepare_outputs(const driver_options *o, int *cleaned, char *err, size_t err_len);

/* Monitors (the program's `monitor` statement): evaluated at the start, at every multiple of
 * p->monitor_every (landed on exactly, like output times) and, without `every`, at the end; each
 * time a row `t,step,NAME...` of out_dir/monitor.csv (values with 17 significant digits) and a
 * line on monitor_out; then p->stop is checked, and when it holds the run ends there (status 0,
 * the snapshot of that time written, res->stopped says why).
 *
 * Runs e (initialised) to the end. Returns 0; 1 when the run failed (a non-finite value, a
 * device error, an output that could not be written): the reason is in err; 2 when o->interrupt
 * stopped it at a step boundary ("interrupted at step 12, t = 0.12" in err; no dump written). */
int driver_run(engine *e, const driver_options *o, driver_result *res, char *err, size_t err_len);

/* Formats a NaN report as "non-finite value (nan) in field u at cell (3, 4), x = 0.35, y = 0.45,
 * at step 12, t = 0.12". */
void driver_describe_nan(const pj_program *p, const sim_nan_report *r, char *out, size_t len);

double driver_now(void); /* monotonic seconds */
/* A rate in Mcells/s as the summary and progress lines print it: three significant digits, and
 * never an exponent (1420, 95.6, 3.96, 0.119). Returns buf. */
const char *driver_format_rate(char *buf, size_t len, double mcells);

#endif
