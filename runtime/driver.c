/* driver.c — the run loop (see driver.h).
 *
 * Time: the run stops at every output time and at the end exactly. Between stops it takes
 * steps of dt; the last step before a stop is shortened to land on it (never a step longer
 * than dt, never a sliver left over from rounding: a remainder within 1e-9 dt of a whole
 * step count is that many steps). */
#include "driver.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "checkpoint.h"
#include "diag.h"
#include "writers.h"

double driver_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void driver_describe_nan(const pj_program *p, const sim_nan_report *r, char *out, size_t len)
{
    char cell[96] = "", where[160] = "";
    for (int a = 0; a < p->dim; a++) {
        size_t n = strlen(cell), m = strlen(where);
        snprintf(cell + n, sizeof cell - n, "%s%lld", a ? ", " : "", (long long)r->cell[a]);
        snprintf(where + m, sizeof where - m, ", %c = %.6g", "xyz"[a], r->x[a]);
    }
    snprintf(out, len, "non-finite value (%g) in field %s at cell (%s)%s, at step %lld, t = %.9g", r->value,
             p->field_names[r->field], cell, where, (long long)r->step, r->t);
}

static int engine_field(void *obj, int f, double *out, char *err, size_t len)
{
    return engine_get_field(obj, f, out, err, len);
}

/* ---- before the run ------------------------------------------------------------------------ */

int driver_check_counts(const driver_options *o, double t_now, char *err, size_t err_len)
{
    const double dt = o->dt;
    const double end = o->steps >= 0 ? (double)o->steps * dt : o->until;
    if (!isfinite(end)) {
        if (o->steps >= 0)
            diag_set(err, err_len, "%lld steps of dt = %g end at t = %g: the end time must be finite",
                     (long long)o->steps, dt, end);
        else diag_set(err, err_len, "the end time t = %g must be finite", end);
        return -1;
    }
    char from[64] = "";
    if (t_now > 0) snprintf(from, sizeof from, " from t = %g", t_now);
    double steps = o->steps >= 0 ? (double)o->steps : (end - t_now) / dt;
    if (!(steps <= DRIVER_MAX_STEPS)) {
        diag_set(err, err_len, "dt = %g%s to t = %g makes %.3g steps, more than the %.0e a run may take", dt, from,
                 end, steps, DRIVER_MAX_STEPS);
        return -1;
    }
    if (end > t_now && end + dt == end) {
        diag_set(err, err_len, "dt = %g is below the resolution of t = %g: a step would not move the time", dt, end);
        return -1;
    }
    /* output times closer than the tolerance the run lands with would be one snapshot: refused where
       the file is compiled, against its own end; again here against this run's (--until) */
    const double tol = 1e-12 * fmax(1, fabs(end));
    for (int i = 0; i < o->n_output_at; i++) {
        double t = o->output_at[i], prev = i ? o->output_at[i - 1] : 0;
        if (t > 0 && t - prev <= tol) {
            char a[32], b[32];
            diag_set(err, err_len, "output time %s is within %g of %s%s, the tolerance a run to t = %g lands on a time "
                     "with: the two would be one snapshot", diag_number(a, sizeof a, t), tol, i ? "" : "the start t = ",
                     diag_number(b, sizeof b, prev), end);
            return -1;
        }
    }
    double monitors = o->monitor_every > 0 ? end / o->monitor_every : 0;
    if (!(monitors <= DRIVER_MAX_OUTPUTS)) {
        diag_set(err, err_len, "monitor every = %g to t = %g makes %.3g monitor times, more than the %.0e a run may have",
                 o->monitor_every, end, monitors, DRIVER_MAX_OUTPUTS);
        return -1;
    }
    double outputs = o->output_every > 0 ? end / o->output_every : 0;
    if (!(outputs <= DRIVER_MAX_OUTPUTS)) {
        diag_set(err, err_len, "output every = %g to t = %g makes %.3g output times, more than the %.0e a run may have",
                 o->output_every, end, outputs, DRIVER_MAX_OUTPUTS);
        return -1;
    }
    return 0;
}

int driver_prepare_outputs(const driver_options *o, int *cleaned, char *err, size_t err_len)
{
    *cleaned = 0;
    char why[512];
    if (o->dump_path && writers_check_writable(o->dump_path, why, sizeof why) < 0) {
        diag_set(err, err_len, "cannot write the dump %s: %s", o->dump_path, why);
        return -1;
    }
    int stale = 0; /* the temporaries of a checkpoint a killed run was writing */
    if (o->checkpoint_dir && (!o->out_dir || strcmp(o->checkpoint_dir, o->out_dir)) &&
        checkpoint_prepare(o->checkpoint_dir, 1, &stale, err, err_len) < 0)
        return -1;
    if (!o->out_dir) return 0;
    if (o->resumed) { /* the series of the run that wrote the checkpoint goes on (driver_run) */
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/snapshots.csv", o->out_dir);
        if (writers_mkdirs(o->out_dir, why, sizeof why) < 0 || writers_check_writable(probe, why, sizeof why) < 0) {
            diag_set(err, err_len, "cannot write in the output folder %s: %s", o->out_dir, why);
            return -1;
        }
        return checkpoint_prepare(o->out_dir, o->checkpoint_dir && !strcmp(o->checkpoint_dir, o->out_dir), &stale, err, err_len);
    }
    if (writers_mkdirs(o->out_dir, why, sizeof why) < 0) {
        /* why is "FOLDER: reason" for the first folder that could not be made */
        size_t n = strlen(o->out_dir);
        const char *reason = !strncmp(why, o->out_dir, n) && !strncmp(why + n, ": ", 2) ? why + n + 2 : why;
        diag_set(err, err_len, "cannot create the output folder %s: %s", o->out_dir, reason);
        return -1;
    }
    int removed = writers_series_clean(o->out_dir, why, sizeof why);
    if (removed < 0) {
        diag_set(err, err_len, "cannot write in the output folder %s: %s", o->out_dir, why);
        return -1;
    }
    *cleaned = removed;
    return checkpoint_prepare(o->out_dir, o->checkpoint_dir && !strcmp(o->checkpoint_dir, o->out_dir), &stale, err, err_len);
}

/* ---- the loop ------------------------------------------------------------------------------ */

/* Over MPI (engine_processes > 1) rank 0 writes every output: the fields are gathered there, the
 * other processes take part in the gathers and then learn whether the writing worked. */
static int gather_only(engine *e, const int *fields, int n_fields, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    int n = fields ? n_fields : p->n_fields;
    for (int i = 0; i < n; i++)
        if (engine_get_field(e, fields ? fields[i] : i, NULL, err, len) < 0) return -1;
    return 0;
}

/* Over MPI, a VTK snapshot is a .pvti or .pvtr (rank 0's series) of pieces: each process writes
 * its block (.vti, or .vtr with its faces' real positions on a mesh with listed faces). */
static int write_piece(engine *e, const driver_options *o, int index, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    const grid_block *b = engine_block(e);
    const kir_launch *G = engine_geometry(e);
    int n = o->fields ? o->n_fields : p->n_fields, rc = -1;
    writers_frame fr = {.dim = p->dim, .t = engine_time(e), .n_fields = n, .mesh = p};
    const char **names = calloc((size_t)n + 1, sizeof *names);
    double **data = calloc((size_t)n + 1, sizeof *data);
    size_t cells = (size_t)(b->n[0] * b->n[1] * b->n[2]);
    char *path = malloc(strlen(o->out_dir) + 64);
    for (int a = 0; a < 3; a++) {
        fr.n[a] = b->n[a];
        fr.first[a] = b->first[a];
        fr.h[a] = G->h[a];
        fr.origin[a] = G->origin[a];
    }
    if (!names || !data || !path) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int f = o->fields ? o->fields[i] : i;
        names[i] = p->field_names[f];
        data[i] = malloc(sizeof **data * cells);
        if (!data[i]) {
            diag_set(err, len, "out of memory");
            goto done;
        }
        if (engine_get_block_field(e, f, data[i], err, len) < 0) goto done;
    }
    fr.names = names;
    fr.data = (const double *const *)data;
    int at = sprintf(path, "%s/", o->out_dir);
    writers_piece_name(path + at, 64, index, engine_rank(e), writers_frame_rectilinear(&fr));
    rc = writers_vtk(path, &fr, err, len);
done:
    for (int i = 0; data && i < n; i++) free(data[i]);
    free(data);
    free(names);
    free(path);
    return rc;
}

static int snapshot(engine *e, const driver_options *o, writers_series *ws, driver_result *res, char *err,
                    size_t len)
{
    if (engine_processes(e) > 1 && o->out_dir && !o->no_snapshots && (o->formats & PJ_FMT_VTK)) {
        int failed = write_piece(e, o, res->snapshots, err, len) < 0;
        if (engine_agree(e, failed, err, len)) return -1;
    }
    if (engine_rank(e) != 0) {
        if (!o->out_dir || o->no_snapshots) return 0;
        if (gather_only(e, o->fields, o->n_fields, err, len) < 0) return -1;
        if (engine_agree(e, 0, err, len)) return -1;
        res->snapshots++;
        return 0;
    }
    if (!ws) return 0;
    writers_frame fr;
    if (writers_frame_build(&fr, engine_program(e), engine_geometry(e), engine_time(e), o->fields, o->n_fields,
                            engine_field, e, err, len) < 0)
        return -1;
    int r = writers_series_write(ws, &fr, err, len);
    writers_frame_free(&fr);
    if (engine_agree(e, r < 0, err, len)) r = -1; /* over MPI every process learns it */
    if (r == 0) res->snapshots++;
    return r;
}

/* The stage kernels record whether they stored a non-finite value; only then is the state
 * scanned to name the field and cell. `full` scans regardless (the initial values). Returns
 * -1 (message in err) for a non-finite value or a back-end error. */
static int check(engine *e, int full, char *err, size_t len)
{
    int seen = engine_take_nonfinite(e, err, len);
    if (seen < 0) return -1;
    if (!seen && !full) return 0;
    sim_nan_report rep;
    int found = engine_check_finite(e, &rep, err, len);
    if (found < 0) return -1;
    if (!found) return 0;
    driver_describe_nan(engine_program(e), &rep, err, len);
    return -1;
}

/* ---- monitors ------------------------------------------------------------------------------ */

typedef struct monitors {
    const pj_program *p;
    FILE *csv;              /* out_dir/monitor.csv, or NULL */
    double *values;         /* params then monitors: what the stop condition reads */
    int cap;                /* entries in values */
} monitors;

/* After a resume, monitor.csv keeps the stopped run's rows before the checkpoint's time t (beyond
 * tol): the file is cut after the last of them (a row at or after t, or one torn by a kill, goes)
 * and opened to append. A file that is not the header `head` then rows (missing, another
 * problem's) starts again with the header. NULL with errno on an error. */
static FILE *monitor_csv_resume(const char *path, const char *head, double t, double tol, char *why, size_t why_len)
{
    int fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        diag_set(why, why_len, "%s", strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        diag_set(why, why_len, "not a regular file");
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r+");
    if (!f) {
        diag_set(why, why_len, "%s", strerror(errno));
        close(fd);
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    off_t keep = 0; /* bytes kept: the header and the rows before t */
    if (n > 0 && (size_t)n == strlen(head) && !memcmp(line, head, (size_t)n)) {
        keep = (off_t)n;
        while ((n = getline(&line, &cap, f)) > 0 && line[n - 1] == '\n') {
            char *end;
            double row_t = strtod(line, &end);
            if (end == line || *end != ',' || !(row_t < t - tol)) break;
            keep += (off_t)n;
        }
    }
    free(line);
    if (ftruncate(fd, keep) < 0 || fseeko(f, keep, SEEK_SET) < 0 || (!keep && fputs(head, f) == EOF) ||
        fflush(f) == EOF) {
        diag_set(why, why_len, "%s", strerror(errno));
        fclose(f);
        return NULL;
    }
    return f;
}

/* monitor.csv in the output folder (rank 0): a new file with its header, or after a resume the
 * stopped run's file up to the checkpoint (monitor_csv_resume). Rows are flushed one by one, so a
 * run killed keeps every row it took. */
static int monitors_open(monitors *m, engine *e, const driver_options *o, double tol, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    memset(m, 0, sizeof *m);
    m->p = p;
    if (!p->has_monitor || o->no_monitors) return 0;
    m->cap = p->n_params + p->n_monitors + 1;
    m->values = calloc((size_t)m->cap, sizeof *m->values);
    if (!m->values) {
        diag_set(err, len, "out of memory");
        return -1;
    }
    if (!o->out_dir) return 0;
    int failed = 0;
    if (engine_rank(e) == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/monitor.csv", o->out_dir);
        size_t hl = 8;
        for (int i = 0; i < p->n_monitors; i++) hl += strlen(p->monitor_names[i]) + 1;
        char *head = malloc(hl);
        if (head) {
            size_t k = (size_t)snprintf(head, hl, "t,step");
            for (int i = 0; i < p->n_monitors; i++) k += (size_t)snprintf(head + k, hl - k, ",%s", p->monitor_names[i]);
            snprintf(head + k, hl - k, "\n");
        }
        char why[256] = "out of memory";
        if (head && o->resumed) m->csv = monitor_csv_resume(path, head, engine_time(e), tol, why, sizeof why);
        else if (head && (!(m->csv = fopen(path, "w")) || fputs(head, m->csv) == EOF || fflush(m->csv) == EOF)) {
            diag_set(why, sizeof why, "%s", strerror(errno));
            if (m->csv) fclose(m->csv);
            m->csv = NULL;
        }
        if (!m->csv) {
            diag_set(err, len, "cannot write %s: %s", path, why);
            failed = 1;
        }
        free(head);
    }
    return -engine_agree(e, failed, err, len);
}

static int monitors_close(monitors *m, char *err, size_t len, int ok)
{
    int r = 0;
    if (m->csv && fclose(m->csv) != 0 && ok) {
        diag_set(err, len, "cannot write monitor.csv: %s", strerror(errno));
        r = -1;
    }
    free(m->values);
    return r;
}

/* The monitors now: a row of monitor.csv, a line on monitor_out, then the stop condition.
 * Returns 1 when the run must stop (res->stopped says why), 0 to go on, -1 on an error. */
static int monitors_take(monitors *m, engine *e, const driver_options *o, driver_result *res, char *err, size_t len)
{
    const pj_program *p = engine_program(e); /* a hot swap may have changed it */
    if (!m->values || !p->has_monitor) return 0; /* not taken in this run, or none now */
    if (p->n_params + p->n_monitors + 1 > m->cap) {
        double *v = realloc(m->values, sizeof *v * (size_t)(p->n_params + p->n_monitors + 1));
        if (!v) {
            diag_set(err, len, "out of memory");
            return -1;
        }
        m->values = v;
        m->cap = p->n_params + p->n_monitors + 1;
    }
    double *mv = m->values + p->n_params;
    if (engine_reduce(e, mv, err, len) < 0) return -1;
    double t = engine_time(e);
    long long step = (long long)engine_steps(e);
    int failed = 0;
    if (m->csv) {
        fprintf(m->csv, "%.17g,%lld", t, step);
        for (int i = 0; i < p->n_monitors; i++) fprintf(m->csv, ",%.17g", mv[i]);
        fprintf(m->csv, "\n");
        if (fflush(m->csv) == EOF || ferror(m->csv)) { /* a row at a time: kept when the run is killed */
            diag_set(err, len, "cannot write monitor.csv in %s", o->out_dir);
            failed = 1;
        }
    }
    if (engine_agree(e, failed, err, len)) return -1;
    if (o->monitor_out && engine_rank(e) == 0) {
        fprintf(o->monitor_out, "pdejit: monitor t = %.9g, step %lld:", t, step);
        for (int i = 0; i < p->n_monitors; i++)
            fprintf(o->monitor_out, "%s %s = %.9g", i ? "," : "", p->monitor_names[i], mv[i]);
        fprintf(o->monitor_out, "\n");
        fflush(o->monitor_out);
    }
    if (o->on_monitor && engine_rank(e) == 0 &&
        o->on_monitor(o->monitor_ctx, t, (int64_t)step, p->n_monitors, (const char *const *)p->monitor_names, mv) &&
        o->interrupt)
        atomic_store(o->interrupt, 1); /* the caller asked to stop: as pj_sim_interrupt */
    if (!p->stop || !p->stop->n_outputs) return 0;
    const double *params = engine_params(e);
    for (int i = 0; i < p->n_params; i++) m->values[i] = params[i];
    if (kir_eval_uniform(p->stop, p->stop->outputs[0].node, m->values, t) != 0) {
        snprintf(res->stopped, sizeof res->stopped, "%s at t = %.9g (step %lld)", p->stop_text ? p->stop_text : "stop",
                 t, step);
        return 1;
    }
    return 0;
}

/* The progress callback (rank 0): the time, the end and the steps of this run; a nonzero return
 * stops the run as o->interrupt does. */
static void progress_call(engine *e, const driver_options *o, double end, int64_t steps0)
{
    if (o->on_progress && engine_rank(e) == 0 &&
        o->on_progress(o->progress_ctx, engine_time(e), end, engine_steps(e) - steps0) && o->interrupt)
        atomic_store(o->interrupt, 1);
}

const char *driver_format_rate(char *buf, size_t len, double mcells)
{
    if (mcells >= 100) /* %.3g would print 1.42e+03 */
        snprintf(buf, len, "%.0f", mcells);
    else
        snprintf(buf, len, "%.3g", mcells);
    return buf;
}

/* The progress line on long runs; returns the time it was written. */
static double progress_line(FILE *f, engine *e, double end, int64_t steps0, int64_t cells, double start)
{
    double tnow = driver_now(), t = engine_time(e);
    int64_t taken = engine_steps(e) - steps0; /* the scheme's steps (an adaptive one takes several per engine step) */
    char rate[32];
    fprintf(f, "pdejit: t = %.6g of %.6g (%.0f%%), %lld steps, %s Mcells/s\n", t, end, 100 * t / (end > 0 ? end : 1),
            (long long)taken, driver_format_rate(rate, sizeof rate, (double)taken * (double)cells / (tnow - start) * 1e-6));
    fflush(f);
    return tnow;
}

/* The next time after `after` (beyond a tolerance) in a sequence: k*every, or the list. */
static double next_time(double every, const double *at, int n_at, double after, double tol)
{
    if (at) {
        for (int i = 0; i < n_at; i++)
            if (at[i] > after + tol) return at[i];
        return INFINITY;
    }
    if (!(every > 0)) return INFINITY;
    /* the smallest k with k*every beyond after + tol: the quotient, corrected for its rounding by a
       few steps at most; no loop without a bound, since from 2^53 multiples on k + 1 == k (a
       checkpoint's t = 1e300 spun here for ever): no multiple is representable apart from after */
    double k = floor((after + tol) / every) + 1;
    for (int i = 0; i < 4 && k > 1 && (k - 1) * every > after + tol; i++) k--;
    for (int i = 0; i < 4 && k * every <= after + tol; i++) k++;
    return k * every > after + tol ? k * every : INFINITY;
}

/* The snapshot series of a run on rank 0: over MPI its VTK snapshots as .pvti of every process's
 * block; after a resume, the series taken up to the checkpoint's time. NULL with a message. */
static writers_series *open_series(engine *e, const driver_options *o, char *err, size_t err_len)
{
    writers_series *ws = writers_series_open(o->out_dir, o->formats, err, err_len);
    if (ws) writers_series_set_png(ws, &o->png);
    if (ws && engine_processes(e) > 1) {
        int np = engine_processes(e);
        const grid_block *bl = engine_blocks(e);
        int64_t(*first)[3] = malloc(sizeof *first * (size_t)np), (*n)[3] = malloc(sizeof *n * (size_t)np);
        int ok = first && n;
        for (int r = 0; ok && r < np; r++)
            for (int a = 0; a < 3; a++) {
                first[r][a] = bl[r].first[a];
                n[r][a] = bl[r].n[a];
            }
        if (!ok || writers_series_set_pieces(ws, np, (const int64_t(*)[3])first, (const int64_t(*)[3])n) < 0) {
            diag_set(err, err_len, "out of memory");
            writers_series_close(ws);
            ws = NULL;
        }
        free(first);
        free(n);
    }
    if (ws && o->resumed && writers_series_resume(ws, engine_time(e), err, err_len) < 0) {
        writers_series_close(ws);
        ws = NULL;
    }
    return ws;
}

int driver_run(engine *e, const driver_options *o, driver_result *res, char *err, size_t err_len)
{
    memset(res, 0, sizeof *res);
    const double dt = o->dt;
    const int every = o->check_every > 0 ? o->check_every : 1;
    /* a run given in steps ends at steps*dt like any other: output times in between split a
       step without moving the end */
    const double end = o->steps >= 0 ? (double)o->steps * dt : o->until;
    const double tol = 1e-12 * fmax(1, fabs(end));
    const pj_program *p = engine_program(e);
    const double mon_every = p->monitor_every;
    const int has_monitor = p->has_monitor && !o->no_monitors;
    const double *at = o->n_output_at > 0 ? o->output_at : NULL;
    int64_t cells = engine_cells(e);
    writers_series *ws = NULL;
    monitors mon;
    if (monitors_open(&mon, e, o, tol, err, err_len) < 0) {
        monitors_close(&mon, err, err_len, 0);
        return 1;
    }
    const int root = engine_rank(e) == 0;
    FILE *progress = root ? o->progress : NULL;
    if (o->out_dir && !o->no_snapshots) {
        if (root) ws = open_series(e, o, err, err_len);
        if (engine_agree(e, root && !ws, err, err_len)) {
            if (ws) writers_series_close(ws);
            monitors_close(&mon, err, err_len, 0);
            return 1;
        }
    }
    int status = 1, stopped = 0;
    const double t_start = engine_time(e);
    /* the first snapshot and monitor row: always, unless `output at` does not list the start; after
       a resume only when the checkpoint's time is an output time (the stopped run wrote the
       checkpoint before that snapshot and may have died writing it: writers_series_resume took
       the series up to before it) */
    int first_snap = o->resumed ? fabs(next_time(o->output_every, at, o->n_output_at, t_start - 2 * tol, tol) - t_start) <= tol
                                : !at || fabs(at[0] - t_start) <= tol;
    if (check(e, 1, err, err_len) < 0 || (first_snap && snapshot(e, o, ws, res, err, err_len) < 0)) goto done;
    /* the first monitor row: after a resume only when the checkpoint's time is a monitor time (the
       stopped run wrote the checkpoint before that row; monitors_open cut the file before it) */
    int first_mon = !o->resumed ||
                    (mon_every > 0 ? fabs(next_time(mon_every, NULL, 0, t_start - 2 * tol, tol) - t_start) <= tol
                                   : fabs(end - t_start) <= tol);
    if (first_mon && (stopped = monitors_take(&mon, e, o, res, err, err_len)) < 0) goto done;
    if (stopped || !(end > engine_time(e))) { /* nothing to step: the first snapshot is the last */
        status = 0;
        goto done;
    }
    const int64_t steps0 = engine_steps(e);
    progress_call(e, o, end, steps0);
    int interrupted = o->interrupt && atomic_load(o->interrupt);
    /* adaptive rk23/rk45: one engine step covers a span of many steps; an interrupt stops it
       after the step in progress (over MPI they are refused: engine_create) */
    if (o->adaptive) engine_set_adaptive_stop(e, o->interrupt);
    double start = driver_now(), last_report = start;
    double last_callback = start;
    int64_t since_check = 0, done_steps = 0, progress_at = 64;
    double last_checkpoint = engine_time(e);
    while (!interrupted) {
        /* the next stop: an output time, a monitor time or the end (after a resume, the times still
           ahead: the run that wrote the checkpoint took the others) */
        double now = engine_time(e);
        double t_out = next_time(o->output_every, at, o->n_output_at, now, tol);
        double t_mon = has_monitor ? next_time(mon_every, NULL, 0, now, tol) : INFINITY;
        double stop = end;
        if (t_out < end - tol && t_out < stop) stop = t_out;
        if (t_mon < end - tol && t_mon < stop) stop = t_mon;
        /* adaptive steps: the solver chooses its own, one engine step covers the span */
        int64_t n = o->adaptive ? 1 : (int64_t)ceil((stop - engine_time(e)) / dt - 1e-9);
        /* a stop within 1e-9 dt ahead (beyond the landing tolerance: output at = 0.5, 0.50000000001) is
           one short step, landed on: no step at all left the time where it was, and the loop took
           the same stop again for ever, deaf to SIGTERM */
        if (n < 1) n = 1;
        double t0 = driver_now();
        int failed = 0;
        for (int64_t i = 0; i < n && !failed && !interrupted;) {
            double h = i == n - 1 ? stop - engine_time(e) : dt;
            if (h <= 0) break;
            /* whole steps of dt before the last: several per sweep where the engine blocks them
               (temporal blocking); the hook, interrupt and checks then come after the block */
            int64_t m = i < n - 1 && !o->checkpoint_dir ? engine_block_steps(e, n - 1 - i) : 1;
            failed = (m > 1 ? engine_step_n(e, dt, m, err, err_len) : engine_step(e, h, err, err_len)) < 0;
            /* adaptive steps: the steps the engine took in the span (one engine step) */
            done_steps = o->adaptive ? engine_steps(e) - steps0 : done_steps + m;
            i += m;
            if (!failed && o->between_steps) o->between_steps(o->between_ctx);
            if (!failed && o->on_progress && driver_now() - last_callback >= o->progress_seconds) {
                progress_call(e, o, end, steps0);
                last_callback = driver_now();
            }
            if (o->interrupt && atomic_load(o->interrupt)) interrupted = 1;
            if (engine_processes(e) > 1) interrupted = engine_any(e, interrupted); /* every process stops */
            if (!failed && (since_check += m) >= every) {
                since_check = 0;
                failed = check(e, 0, err, err_len) < 0;
            }
            if (!failed && o->checkpoint_dir && checkpoint_due(o->checkpoint_every, last_checkpoint, engine_time(e))) {
                last_checkpoint = engine_time(e);
                failed = (since_check && check(e, 0, err, err_len) < 0) ||
                         checkpoint_write(e, o->checkpoint_dir, o->seed, o->single, dt, err, err_len) < 0;
                since_check = 0;
            }
            if (progress && done_steps >= progress_at && (progress_at = done_steps + 64) &&
                driver_now() - last_report > 3.0)
                last_report = progress_line(progress, e, end, steps0, cells, start);
        }
        if (!failed) failed = engine_sync(e, err, err_len) < 0;
        res->seconds += driver_now() - t0;
        if (failed || (since_check && check(e, 0, err, err_len) < 0)) goto done;
        since_check = 0;
        if (interrupted) break; /* no snapshot or monitor between their times */
        int at_end = stop >= end;
        /* outputs: at their times; at the end too unless `output at` leaves it out */
        int snap = fabs(t_out - stop) <= tol || (at_end && !at);
        int take = fabs(t_mon - stop) <= tol || (at_end && !(mon_every > 0));
        if (take && (stopped = monitors_take(&mon, e, o, res, err, err_len)) < 0) goto done;
        if ((snap || (stopped && !at)) && snapshot(e, o, ws, res, err, err_len) < 0) goto done;
        if (stopped || at_end) break;
        if (snap && o->at_output && o->at_output(o->between_ctx, err, err_len)) goto done;
        if (o->interrupt && atomic_load(o->interrupt)) interrupted = 1; /* a callback asked to stop */
    }
    if (!interrupted) progress_call(e, o, end, steps0);
    if (!interrupted && o->interrupt && atomic_load(o->interrupt)) interrupted = 1; /* asked at the end */
    status = 0;
    if (interrupted) {
        atomic_store(o->interrupt, 0);
        diag_set(err, err_len, "interrupted at step %lld, t = %.9g", (long long)engine_steps(e), engine_time(e));
        status = 2;
    }
done:
    if (o->adaptive) engine_set_adaptive_stop(e, NULL);
    res->steps = engine_steps(e);
    res->t = engine_time(e);
    if (ws) writers_series_close(ws);
    if (monitors_close(&mon, err, err_len, status == 0) < 0 && status == 0) status = 1;
    if (status == 0 && o->dump_path) {
        if (!root) return gather_only(e, NULL, 0, err, err_len) < 0 || engine_agree(e, 0, err, err_len) ? 1 : 0;
        writers_frame fr;
        if (writers_frame_build(&fr, engine_program(e), engine_geometry(e), res->t, NULL, 0, engine_field, e, err,
                                err_len) < 0)
            return 1;
        int r = writers_csv(o->dump_path, &fr, err, err_len);
        writers_frame_free(&fr);
        if (engine_agree(e, r < 0, err, err_len)) r = -1;
        if (r < 0) return 1;
    }
    return status;
}
