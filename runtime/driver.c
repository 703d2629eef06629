/* driver.c — the run loop (see driver.h).
 *
 * Time: the run stops at every output time and at the end exactly. Between stops it takes
 * steps of dt; the last step before a stop is shortened to land on it (never a step longer
 * than dt, never a sliver left over from rounding: a remainder within 1e-9 dt of a whole
 * step count is that many steps). */
#include "driver.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "writers.h"

double driver_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void driver_describe_nan(const sim *s, const sim_nan_report *r, char *out, size_t len)
{
    const pj_program *p = sim_program(s);
    char cell[96] = "", where[160] = "";
    for (int a = 0; a < p->dim; a++) {
        size_t n = strlen(cell), m = strlen(where);
        snprintf(cell + n, sizeof cell - n, "%s%lld", a ? ", " : "", (long long)r->cell[a]);
        snprintf(where + m, sizeof where - m, ", %c = %.6g", "xyz"[a], r->x[a]);
    }
    snprintf(out, len, "non-finite value (%g) in field %s at cell (%s)%s, at step %lld, t = %.9g", r->value,
             p->field_names[r->field], cell, where, (long long)r->step, r->t);
}

static int snapshot(sim *s, const driver_options *o, writers_series *ws, driver_result *res, char *err, size_t len)
{
    if (!ws) return 0;
    writers_frame fr;
    if (writers_frame_from_sim(s, o->fields, o->n_fields, &fr, err, len) < 0) return -1;
    int r = writers_series_write(ws, &fr, err, len);
    writers_frame_free(&fr);
    if (r == 0) res->snapshots++;
    return r;
}

/* The stage kernels record whether they stored a non-finite value; only then is the state
 * scanned to name the field and cell. `full` scans regardless (the initial values). */
static int check(sim *s, int full, char *err, size_t len)
{
    sim_nan_report rep;
    if (!sim_take_nonfinite(s) && !full) return 0;
    if (!sim_check_finite(s, &rep)) return 0;
    driver_describe_nan(s, &rep, err, len);
    return -1;
}

int driver_run(sim *s, const driver_options *o, driver_result *res, char *err, size_t err_len)
{
    memset(res, 0, sizeof *res);
    const double dt = o->dt;
    const int every = o->check_every > 0 ? o->check_every : 1;
    /* a run given in steps ends at steps*dt like any other: output times in between split a
       step without moving the end */
    const double end = o->steps >= 0 ? (double)o->steps * dt : o->until;
    writers_series *ws = NULL;
    if (o->out_dir) {
        ws = writers_series_open(o->out_dir, o->formats, err, err_len);
        if (!ws) return 1;
    }
    int status = 0;
    sim_take_nonfinite(s);
    if (check(s, 1, err, err_len) < 0 || snapshot(s, o, ws, res, err, err_len) < 0) {
        status = 1;
        goto done;
    }
    double start = driver_now(), last_report = start, t0 = start;
    int64_t since_check = 0, done_steps = 0;
    int n_out = 1;
    while (1) {
        /* the next stop: an output time or the end */
        double t = sim_time(s);
        double stop = end;
        if (o->output_every > 0) {
            double next = (double)n_out * o->output_every;
            if (next < end - 1e-12 * fmax(1, fabs(end))) stop = next;
        }
        double span = stop - t;
        int64_t n = (int64_t)ceil(span / dt - 1e-9);
        if (n < 0) n = 0;
        t0 = driver_now();
        for (int64_t i = 0; i < n; i++) {
            double h = i == n - 1 ? stop - sim_time(s) : dt;
            if (h <= 0) break;
            sim_step(s, h);
            done_steps++;
            if (++since_check >= every) {
                since_check = 0;
                if (check(s, 0, err, err_len) < 0) {
                    res->seconds += driver_now() - t0;
                    status = 1;
                    goto done;
                }
            }
            if (o->progress && ((done_steps & 63) == 0)) {
                double now = driver_now();
                if (now - last_report > 3.0) {
                    last_report = now;
                    fprintf(o->progress, "pdejit: t = %.6g of %.6g (%.0f%%), %lld steps, %.3g Mcells/s\n", sim_time(s), end,
                            100 * sim_time(s) / (end > 0 ? end : 1), (long long)done_steps,
                            (double)done_steps * (double)sim_cells(s) / (now - start) * 1e-6);
                    fflush(o->progress);
                }
            }
        }
        res->seconds += driver_now() - t0;
        if (since_check && check(s, 0, err, err_len) < 0) {
            status = 1;
            goto done;
        }
        since_check = 0;
        if (stop >= end) {
            if (snapshot(s, o, ws, res, err, err_len) < 0) status = 1;
            break;
        }
        n_out++;
        if (snapshot(s, o, ws, res, err, err_len) < 0) {
            status = 1;
            goto done;
        }
    }
done:
    res->steps = sim_steps(s);
    res->t = sim_time(s);
    if (ws) writers_series_close(ws);
    if (status == 0 && o->dump_path) {
        writers_frame fr;
        if (writers_frame_from_sim(s, NULL, 0, &fr, err, err_len) < 0) return 1;
        int r = writers_csv(o->dump_path, &fr, err, err_len);
        writers_frame_free(&fr);
        if (r < 0) return 1;
    }
    return status;
}
