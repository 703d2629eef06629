/* test_monitor.c — monitors, stop conditions and output times as `pdejit run` gives them:
 * monitor.csv's columns and rows at exactly the monitor times (between output times, with a dt
 * that divides neither), the values against the exact solution, --verbose lines, `stop when`
 * ending a run with exit 0 and its reason, `output at`, the public API's pj_sim_monitor and
 * pj_run_options' on_monitor and on_progress callbacks, and the errors of bad monitors at the
 * user's text. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pdejit.h"

static char *write_file(const char *name, const char *text)
{
    char *path = malloc(strlen(tu_dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}


static char *read_in_dir(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    return tu_read_file(path, NULL);
}

/* u = x + t exactly (du/dt = 1) on 4 cells of [0, 1]: the midpoint rule gives integral(u) =
 * 0.5 + t, maxval 0.875 + t, minval 0.125 + t, mean 0.5 + t. */
static const char *linear =
    "mesh grid(nx = 4)\n"
    "field u = x\n"
    "eq dt(u) = 1\n"
    "monitor every = 0.5, I = integral(u), M = maxval(u), m = minval(u), A = mean(u)\n"
    "time dt = 0.3, until = 2\n"
    "output every = 0.4, format = csv\n";

static void monitor_csv_at_exact_times(void **state)
{
    (void)state;
    const char *bes[] = {"interp", "cpu"};
    for (int b = 0; b < 2; b++) {
        char *f = write_file("lin.pde", linear), *out;
        assert_int_equal(tu_pdejit(&out, "run lin.pde --backend %s --out lin", bes[b]), 0);
        free(out);
        char *csv = read_in_dir("lin/monitor.csv");
        assert_non_null(csv);
        assert_true(!strncmp(csv, "t,step,I,M,m,A\n", 15));
        /* rows at t = 0, 0.5, 1, 1.5, 2 exactly, although the outputs (every 0.4) and dt = 0.3
           divide none of them */
        char *line = strchr(csv, '\n') + 1;
        int rows = 0;
        for (; *line; rows++) {
            double t, I, M, m, A;
            long long step;
            assert_int_equal(sscanf(line, "%lf,%lld,%lf,%lf,%lf,%lf", &t, &step, &I, &M, &m, &A), 6);
            assert_true(fabs(t - 0.5 * rows) < 1e-15);
            assert_true(fabs(I - (0.5 + t)) < 1e-13);
            assert_true(fabs(M - (0.875 + t)) < 1e-13);
            assert_true(fabs(m - (0.125 + t)) < 1e-13);
            assert_true(fabs(A - (0.5 + t)) < 1e-13);
            line = strchr(line, '\n') + 1;
        }
        assert_int_equal(rows, 5);
        free(csv);
        /* the snapshots still at every 0.4 */
        char *index = read_in_dir("lin/snapshots.csv");
        double t[6];
        assert_int_equal(sscanf(strchr(index, '\n') + 1, "%*d,%lf\n%*d,%lf\n%*d,%lf\n%*d,%lf\n%*d,%lf\n%*d,%lf", &t[0],
                                &t[1], &t[2], &t[3], &t[4], &t[5]),
                         6);
        for (int i = 0; i < 6; i++) assert_true(fabs(t[i] - 0.4 * i) < 1e-12);
        free(index);
        free(f);
    }
}

static void verbose_lines(void **state)
{
    (void)state;
    char *f = write_file("lin.pde", linear), *out;
    assert_int_equal(tu_pdejit(&out, "run lin.pde --verbose --out none 2>&1"), 0);
    assert_non_null(strstr(out, "pdejit: monitor t = 0, step 0: I = 0.5, M = 0.875, m = 0.125, A = 0.5\n"
                                "pdejit: monitor t = 0.5, step 3: I = 1, M = 1.375, m = 0.625, A = 1\n"));
    assert_non_null(strstr(out, "pdejit: monitor t = 2, step 10: I = 2.5, M = 2.875, m = 2.125, A = 2.5\n"));
    /* compiled by the runs before (same cache folder): the reduction is a cached kernel */
    assert_non_null(strstr(out, "pdejit: kernel reduce: loaded from the cache"));
    free(out);
    /* without --verbose: no lines */
    assert_int_equal(tu_pdejit(&out, "run lin.pde --out none"), 0);
    assert_null(strstr(out, "monitor"));
    free(out);
    free(f);
}

static void stop_when_ends_the_run(void **state)
{
    (void)state;
    char *f = write_file("stop.pde", "mesh grid(nx = 4)\nfield u = x\neq dt(u) = 1\n"
                                     "monitor every = 0.5, peak = maxval(u)\n"
                                     "stop when peak > 1.6 && t > 0.2   # the peak passes 1.6 at t = 0.725\n"
                                     "time dt = 0.3, until = 2\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run stop.pde --out s --dump final.csv"), 0);
    assert_string_equal(out, "pdejit: stopped: peak > 1.6 && t > 0.2 at t = 1 (step 4)\n");
    free(out);
    char *csv = read_in_dir("s/monitor.csv");
    assert_string_equal(csv, "t,step,peak\n0,0,0.875\n0.5,2,1.375\n1,4,1.875\n");
    free(csv);
    /* the final state is the one at the stop: u = x + 1 */
    char *dump = read_in_dir("final.csv");
    assert_string_equal(dump, "x,u\n0.125,1.125\n0.375,1.375\n0.625,1.625\n0.875,1.875\n");
    free(dump);
    /* the condition may hold at the start: no step taken */
    char *g = write_file("stop0.pde", "mesh grid(nx = 4)\nparam lim = 2\nfield u = x\neq dt(u) = 1\nmonitor low = minval(u)\n"
                                      "stop when low < lim\ntime dt = 0.3, until = 2\n");
    assert_int_equal(tu_pdejit(&out, "run stop0.pde --out none"), 0);
    assert_string_equal(out, "pdejit: stopped: low < lim at t = 0 (step 0)\n");
    free(out);
    /* a param set on the command line changes the condition, never the kernels */
    assert_int_equal(tu_pdejit(&out, "run stop0.pde --out none --set lim=-1 --dump /dev/stdout"), 0);
    assert_non_null(strstr(out, "0.875,2.875\n"));
    assert_null(strstr(out, "stopped"));
    free(out);
    free(g);
    free(f);
}

static void output_at_listed_times(void **state)
{
    (void)state;
    char *f = write_file("at.pde", "mesh grid(nx = 4)\nconst T = 1.7\nfield u = x\neq dt(u) = 1\n"
                                   "time dt = 0.3, until = 2\noutput at = 0.25, 1,\n   T, format = csv\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run at.pde --out at"), 0);
    free(out);
    char *index = read_in_dir("at/snapshots.csv");
    assert_non_null(index);
    double t[3];
    assert_int_equal(sscanf(strchr(index, '\n') + 1, "%*d,%lf\n%*d,%lf\n%*d,%lf\n", &t[0], &t[1], &t[2]), 3);
    assert_true(t[0] == 0.25 && t[1] == 1 && t[2] == 1.7);
    int lines = 0;
    for (const char *c = index; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 4); /* header + 3: neither the start nor the end */
    free(index);
    char *snap = read_in_dir("at/snapshot_000002.csv");
    double x, u;
    assert_int_equal(sscanf(strchr(snap, '\n') + 1, "%lf,%lf", &x, &u), 2);
    assert_true(fabs(u - (x + 1.7)) < 1e-14);
    free(snap);
    free(f);
}

/* The public API: pj_sim_monitor now, on the interpreter and the CPU JIT. */
static void api_reads_monitors(void **state)
{
    (void)state;
    pj_problem *pr = NULL;
    char *diag = NULL;
    assert_int_equal(pj_problem_compile("lin.pde", linear, strlen(linear), &pr, &diag), PJ_OK);
    assert_int_equal(pj_problem_monitor_count(pr), 4);
    assert_int_equal(pj_problem_has_monitor(pr), 1);
    assert_string_equal(pj_problem_monitor_name(pr, 1), "M");
    assert_null(pj_problem_monitor_name(pr, 4));
    pj_backend bes[] = {PJ_BACKEND_INTERP, PJ_BACKEND_CPU};
    for (int b = 0; b < 2; b++) {
        pj_sim_options so = {.backend = bes[b], .threads = 1};
        pj_sim *sim = NULL;
        char err[512];
        assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
        double v = 0;
        assert_int_equal(pj_sim_monitor(sim, "I", &v, err, sizeof err), PJ_OK);
        assert_true(v == 0.5);
        assert_int_equal(pj_sim_advance(sim, 0.1, 0.75, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_monitor(sim, "M", &v, err, sizeof err), PJ_OK);
        assert_true(fabs(v - 1.625) < 1e-14);
        assert_int_equal(pj_sim_monitor(sim, "nope", &v, err, sizeof err), PJ_ERR_INPUT);
        assert_true(fabs(v - 1.625) < 1e-14);
        pj_sim_free(sim);
    }
    pj_problem_free(pr);
}

/* pj_run_options' callbacks: on_monitor at each monitor time with the row monitor.csv gets (the
 * values against Euler's (1 - dt)^n exactly), on_progress from the start to the end; a nonzero
 * return stops the run there (PJ_INTERRUPTED), and the next run goes on from there. */
typedef struct seen {
    int n_mon, n_prog, stop_at;
    double t[8], v[8];
    int64_t step[8];
    double first_t, last_t, t_end;
    int64_t last_steps;
} seen;

static int on_monitor(void *ctx, double t, int64_t step, int n, const char *const *names, const double *values)
{
    seen *s = ctx;
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "total");
    if (s->n_mon < 8) {
        s->t[s->n_mon] = t;
        s->step[s->n_mon] = step;
        s->v[s->n_mon] = values[0];
    }
    return ++s->n_mon == s->stop_at;
}

static int on_progress(void *ctx, double t, double t_end, int64_t steps)
{
    seen *s = ctx;
    if (!s->n_prog++) s->first_t = t;
    s->last_t = t;
    s->t_end = t_end;
    s->last_steps = steps;
    return 0;
}

static void api_run_callbacks(void **state)
{
    (void)state;
    const char *text = "mesh grid(nx = 4, Lx = 2)\nfield u = 1\neq dt(u) = -u\ntime dt = 0.125, until = 1\n"
                       "monitor every = 0.25, total = integral(u)\n";
    pj_problem *pr = NULL;
    char *diag = NULL, err[512];
    assert_int_equal(pj_problem_compile("cb.pde", text, strlen(text), &pr, &diag), PJ_OK);
    pj_sim_options so = {.backend = PJ_BACKEND_CPU, .threads = 1};
    pj_sim *sim = NULL;
    assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
    seen s = {0};
    pj_run_options o = pj_run_options_default();
    o.on_monitor = on_monitor;
    o.monitor_ctx = &s;
    o.on_progress = on_progress;
    o.progress_ctx = &s;
    pj_run_result res;
    assert_int_equal(pj_sim_run(sim, &o, &res, err, sizeof err), PJ_OK);
    assert_int_equal(s.n_mon, 5);
    for (int i = 0; i < 5; i++) {
        assert_true(s.t[i] == 0.25 * i);
        assert_int_equal(s.step[i], 2 * i);
        assert_true(s.v[i] == 2 * pow(0.875, 2 * i)); /* integral over Lx = 2 */
    }
    assert_true(s.n_prog >= 2 && s.first_t == 0 && s.last_t == 1 && s.t_end == 1);
    assert_int_equal(s.last_steps, 8);
    pj_sim_free(sim);

    assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
    seen stop = {.stop_at = 3}; /* the third row: t = 0.5 */
    o.monitor_ctx = &stop;
    o.on_progress = NULL;
    assert_int_equal(pj_sim_run(sim, &o, &res, err, sizeof err), PJ_INTERRUPTED);
    assert_true(pj_sim_time(sim) == 0.5);
    assert_int_equal(pj_sim_steps(sim), 4);
    o.on_monitor = NULL;
    assert_int_equal(pj_sim_run(sim, &o, &res, err, sizeof err), PJ_OK); /* the flag was cleared */
    assert_true(pj_sim_time(sim) == 1);
    pj_sim_free(sim);
    pj_problem_free(pr);
}

/* Errors at the user's text: the whole report once, then each message at its line and column. */
static void bad_monitors_point_at_the_text(void **state)
{
    (void)state;
    const char *head = "mesh grid(nx = 8)\nfield u = x\n";
    struct { const char *text, *expect; } cases[] = {
        {"eq dt(u) = 0\nmonitor every = 0.5, mass = u\n",
         "e.pde:4:29: error: monitor 'mass' must be integral(e), maxval(e), minval(e) or mean(e) of a cell expression e\n"
         "    monitor every = 0.5, mass = u\n"
         "                                ^\n"},
        {"eq dt(u) = 0\nmonitor total = integral(u, u)\n", "e.pde:4:17: error: integral() takes 1 argument, not 2\n"},
        {"eq dt(u) = 0\nmonitor every = -1, s = mean(u)\n", "e.pde:4:17: error: monitor every must be a positive time, not -1\n"},
        {"eq dt(u) = 0\nmonitor s = maxval(w)\n", "e.pde:4:20: error: undefined name 'w'"},
        {"eq dt(u) = integral(u)\n",
         "e.pde:3:12: error: integral() is a reduction over the cells: it may only stand in a monitor (monitor NAME = integral(...))\n"},
        {"eq dt(u) = 0\nmonitor s\n", "e.pde:4:9: error: monitor 's' needs a value: monitor s = integral(...)\n"},
        {"eq dt(u) = 0\nmonitor u = mean(u)\n", "e.pde:4:9: error: 'u' is already defined as a field at line 2\n"},
        {"eq dt(u) = 0\nmonitor p = mean(u)\nstop if p < 1\n",
         "e.pde:5:6: error: a stop condition reads `stop when CONDITION`, not `stop if`\n"},
        {"eq dt(u) = 0\nmonitor p = mean(u)\nstop when u < 1\n", "e.pde:5:11: error: a stop condition cannot depend on the field 'u'\n"},
        {"eq dt(u) = 0\nmonitor p = mean(u)\nstop when x < 1\n", "e.pde:5:11: error: a stop condition cannot depend on the coordinate 'x'\n"},
        {"eq dt(u) = 0\nstop when t > 1\n",
         "e.pde:4:1: error: stop when is checked at monitor times: add a monitor statement (monitor every = ...)\n"},
        {"eq dt(u) = mass\nmonitor mass = integral(u)\n", "e.pde:3:12: error: monitor 'mass' can only be used in `stop when`\n"},
        {"eq dt(u) = 0\nmonitor every = 1, a = mean(u)\nmonitor every = 2, b = mean(u)\n",
         "e.pde:5:9: error: monitor every is given twice (first at line 4)\n"},
        {"eq dt(u) = 0\noutput at = 1, 0.5\n", "e.pde:4:16: error: output times must increase: 0.5 comes after 1\n"},
        {"eq dt(u) = 0\noutput every = 1, at = 2\n", "e.pde:4:19: error: give either output every or output at, not both\n"},
        {"eq dt(u) = 0\noutput at = -1\n", "e.pde:4:13: error: an output time must be >= 0, not -1\n"},
        {"eq dt(u) = 0\ntime dt = 0.1, 0.2\n", "e.pde:4:16: error: 'dt' takes one value; settings read NAME = VALUE\n"},
        {"eq dt(u) = 0\noutput 1, format = csv\n", "e.pde:4:8: error: a value without a name: settings read NAME = VALUE\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", head, cases[i].text);
        char *f = write_file("e.pde", text), *out;
        assert_int_equal(tu_pdejit(&out, "check e.pde"), 2);
        if (!strstr(out, cases[i].expect)) fprintf(stderr, "case %zu:\n%s\nexpected:\n%s\n", i, out, cases[i].expect);
        assert_non_null(strstr(out, cases[i].expect));
        free(out);
        free(f);
    }
}

/* samples/pfhub1.pde (PFHub benchmark 1a, Cahn-Hilliard, 200 x 200, periodic) to t = 30 on the CPU:
 * the free energy monitor equals, at t = 0, the same sum computed here from the initial condition
 * (1e-12), and decreases at every monitor time after; the mean concentration is conserved. */
static double pf_c0(double x, double y)
{
    return 0.5 + 0.01 * (cos(0.105 * x) * cos(0.11 * y) + pow(cos(0.13 * x) * cos(0.087 * y), 2) +
                         cos(0.025 * x - 0.15 * y) * cos(0.07 * x - 0.02 * y));
}

static void pfhub1_energy_decreases(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(tu_pdejit(&out, "run %s/samples/pfhub1.pde --until 30 --out pf --quiet", PJ_SOURCE_DIR), 0);
    free(out);
    char *csv = read_in_dir("pf/monitor.csv");
    assert_non_null(csv);
    assert_true(!strncmp(csv, "t,step,energy,mass,cmax,cmin\n", 29));
    /* the energy of the initial condition, summed here: f + kappa/2 |central-difference grad|^2 */
    const int n = 200;
    double e0 = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            double x = i + 0.5, y = j + 0.5, c = pf_c0(x, y);
            double gx = (pf_c0(fmod(x + 1, n), y) - pf_c0(fmod(x - 1 + n, n), y)) / 2;
            double gy = (pf_c0(x, fmod(y + 1, n)) - pf_c0(x, fmod(y - 1 + n, n))) / 2;
            e0 += 5 * pow(c - 0.3, 2) * pow(0.7 - c, 2) + 1.0 * (gx * gx + gy * gy);
        }
    char *line = strchr(csv, '\n') + 1;
    double prev = INFINITY, mass0 = 0;
    int rows = 0;
    for (; *line; rows++) {
        double t, e, mass, cmax, cmin;
        long long step;
        assert_int_equal(sscanf(line, "%lf,%lld,%lf,%lf,%lf,%lf", &t, &step, &e, &mass, &cmax, &cmin), 6);
        if (rows == 0) {
            print_message("initial free energy %.9g (summed here: %.9g)\n", e, e0);
            assert_true(fabs(e - e0) <= 1e-12 * e0);
            mass0 = mass;
        }
        print_message("t = %g: F = %.9g, mean c = %.17g, c in [%.6f, %.6f]\n", t, e, mass, cmin, cmax);
        assert_true(e < prev);
        assert_true(fabs(mass - mass0) <= 1e-13);
        prev = e;
        line = strchr(line, '\n') + 1;
    }
    assert_int_equal(rows, 4);
    free(csv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(monitor_csv_at_exact_times),
        cmocka_unit_test(verbose_lines),
        cmocka_unit_test(stop_when_ends_the_run),
        cmocka_unit_test(output_at_listed_times),
        cmocka_unit_test(api_reads_monitors),
        cmocka_unit_test(api_run_callbacks),
        cmocka_unit_test(bad_monitors_point_at_the_text),
        cmocka_unit_test(pfhub1_energy_decreases),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
