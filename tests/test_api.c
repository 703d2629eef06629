/* test_api.c — the public API (include/pdejit.h) alone: compile, run on both back ends, params,
 * fields, errors as status codes with messages. */
#include "testutil.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

static const char *decay =
    "mesh grid(nx = 16)\nparam k = 1\nfield u = 1 + x\neq dt(u) = -k*u\ntime dt = 0.001, until = 1, scheme = rk4\n";

/* pj_problem_geometry and pj_problem_centres: listed widths give their faces and the middles
 * of them, a uniform axis origin + (i + 1/2) length / n; a radial mesh says so; an axis beyond
 * the dimension is refused and nothing is written. */
static void mesh_centres_and_faces(void **state)
{
    (void)state;
    const char *text = "mesh grid(dx = [0.5, 0.25, 1], ny = 4, Ly = 2, y0 = -1)\nfield u\n";
    pj_problem *p;
    assert_int_equal(pj_problem_compile("m.pde", text, strlen(text), &p, NULL), PJ_OK);
    assert_int_equal(pj_problem_geometry(p), 0);
    double c[5], f[5] = {7, 7, 7, 7, 7};
    assert_int_equal(pj_problem_centres(p, 0, c, f), 0);
    const double cx[3] = {0.25, 0.625, 1.25}, fx[4] = {0, 0.5, 0.75, 1.75};
    for (int i = 0; i < 3; i++) assert_true(c[i] == cx[i]);
    for (int i = 0; i < 4; i++) assert_true(f[i] == fx[i]);
    assert_true(f[4] == 7);
    assert_int_equal(pj_problem_centres(p, 1, c, NULL), 0);
    for (int i = 0; i < 4; i++) assert_true(c[i] == -1 + (i + 0.5) * 0.5);
    c[0] = 7;
    assert_int_equal(pj_problem_centres(p, 2, c, f), -1);
    assert_int_equal(pj_problem_centres(p, -1, c, f), -1);
    assert_true(c[0] == 7);
    pj_problem_free(p);
    text = "mesh cylindrical(nr = 2, nz = 2, Lr = 1, Lz = 4, r0 = 1)\nfield u\n";
    assert_int_equal(pj_problem_compile("c.pde", text, strlen(text), &p, NULL), PJ_OK);
    assert_int_equal(pj_problem_geometry(p), 1);
    assert_int_equal(pj_problem_centres(p, 0, c, f), 0);
    assert_true(c[0] == 1.25 && c[1] == 1.75 && f[0] == 1 && f[1] == 1.5 && f[2] == 2);
    pj_problem_free(p);
    text = "mesh spherical(nr = 2)\nfield u\n";
    assert_int_equal(pj_problem_compile("s.pde", text, strlen(text), &p, NULL), PJ_OK);
    assert_int_equal(pj_problem_geometry(p), 2);
    pj_problem_free(p);
}

static void run_both_backends(void **state)
{
    (void)state;
    pj_problem *pr;
    char *diag = NULL;
    assert_int_equal(pj_problem_compile("decay.pde", decay, strlen(decay), &pr, &diag), PJ_OK);
    assert_null(diag);
    assert_int_equal(pj_problem_dim(pr), 1);
    assert_int_equal(pj_problem_cells(pr), 16);
    assert_string_equal(pj_problem_field_name(pr, 0), "u");
    assert_true(pj_problem_length(pr, 0) == 1 && pj_problem_origin(pr, 0) == 0 && pj_problem_origin(pr, 1) == 0);
    const char *box = "mesh grid(nx = 4, ny = 2, Lx = 2, Ly = 3, x0 = -1, y0 = 0.5)\nfield u\n";
    pj_problem *pb;
    assert_int_equal(pj_problem_compile("box.pde", box, strlen(box), &pb, NULL), PJ_OK);
    assert_true(pj_problem_origin(pb, 0) == -1 && pj_problem_origin(pb, 1) == 0.5 && pj_problem_origin(pb, 2) == 0);
    assert_true(pj_problem_origin(pb, -1) == 0 && pj_problem_origin(pb, 3) == 0 && pj_problem_length(pb, 1) == 3);
    pj_problem_free(pb);
    assert_string_equal(pj_problem_param_name(pr, 0), "k");
    double out[2][16];
    for (int be = 0; be < 2; be++) {
        pj_sim_options o = {.backend = be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, .single = 0, .threads = 2, .fast_math = 0, .solver_options = NULL};
        pj_sim *s;
        char err[256];
        assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_set_param(s, "k", 2), PJ_OK);
        assert_int_equal(pj_sim_set_param(s, "nope", 2), PJ_ERR_INPUT);
        assert_int_equal(pj_sim_advance(s, pj_problem_dt(pr), 0.5, err, sizeof err), PJ_OK);
        assert_true(pj_sim_time(s) == 0.5);
        assert_int_equal(pj_sim_get_field(s, "u", out[be]), PJ_OK);
        for (int i = 0; i < 16; i++) {
            double x = (i + 0.5) / 16;
            assert_true(fabs(out[be][i] - (1 + x) * exp(-1.0)) < 1e-12);
        }
        assert_int_equal(pj_sim_get_field(s, "v", out[be]), PJ_ERR_INPUT);
        pj_sim_free(s);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
    pj_problem_free(pr);
}

static void errors_are_statuses(void **state)
{
    (void)state;
    pj_problem *pr;
    char *diag = NULL;
    const char *bad = "mesh grid(nx = 4)\nfield u = q\n";
    assert_int_equal(pj_problem_compile("bad.pde", bad, strlen(bad), &pr, &diag), PJ_ERR_INPUT);
    assert_null(pr);
    assert_non_null(strstr(diag, "bad.pde:2:11: error: undefined name 'q'"));
    free(diag);
    const char *blow = "mesh grid(nx = 4)\nfield u = 1\neq dt(u) = u^2\n";
    assert_int_equal(pj_problem_compile("blow.pde", blow, strlen(blow), &pr, NULL), PJ_OK);
    pj_sim *s;
    char err[256];
    assert_int_equal(pj_sim_create(pr, NULL, &s, err, sizeof err), PJ_OK);
    assert_int_equal(pj_sim_advance(s, 0, 1, err, sizeof err), PJ_ERR_INPUT);
    assert_int_equal(pj_sim_advance(s, 0.5, 100, err, sizeof err), PJ_ERR_RUN);
    assert_non_null(strstr(err, "non-finite value"));
    assert_non_null(strstr(err, "field u at cell (0)"));
    pj_sim_free(s);
    pj_problem_free(pr);
}

/* A view aliases the field: shape and strides describe the state, a write through it is what
 * the next step starts from (du/dt = 0 keeps it; du/dt = 1 adds dt). */
static void field_views_alias(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 5, ny = 3)\nfield u = x + 10*y\nfield c = 2\neq dt(u) = 1\n"
                      "time dt = 0.25, steps = 1, scheme = euler\n";
    pj_problem *pr;
    assert_int_equal(pj_problem_compile("view.pde", src, strlen(src), &pr, NULL), PJ_OK);
    for (int be = 0; be < 2; be++) {
        for (int single = 0; single <= 1; single++) {
            pj_sim_options o = {.backend = be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, .single = single, .threads = 1, .fast_math = 0, .solver_options = NULL};
            pj_sim *s;
            char err[256];
            assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_OK);
            pj_field_view v;
            assert_int_equal(pj_sim_field_view(s, "nope", &v), PJ_ERR_INPUT);
            assert_int_equal(pj_sim_field_view(s, "u", &v), PJ_OK);
            assert_int_equal(v.shape[0], 5);
            assert_int_equal(v.shape[1], 3);
            assert_int_equal(v.shape[2], 1);
            assert_int_equal(v.strides[0], 1);
            assert_true(v.strides[1] >= 5);
            assert_int_equal(v.elem_size, single ? 4 : 8);
            assert_int_equal(v.on_device, 0);
            double hx = 1.0 / 5, hy = 1.0 / 3;
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 5; i++) {
                    char *at = (char *)v.data + (i * v.strides[0] + j * v.strides[1]) * v.elem_size;
                    double want = (i + 0.5) * hx + 10 * (j + 0.5) * hy;
                    double got = single ? *(float *)at : *(double *)at;
                    assert_true(fabs(got - want) < (single ? 1e-5 : 1e-14));
                    /* write 100*i + j through the view */
                    if (single) *(float *)at = (float)(100 * i + j);
                    else *(double *)at = 100 * i + j;
                }
            assert_int_equal(pj_sim_advance(s, 0.25, 0.25, err, sizeof err), PJ_OK);
            double u[15];
            assert_int_equal(pj_sim_get_field(s, "u", u), PJ_OK);
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 5; i++) assert_true(u[i + 5 * j] == 100 * i + j + 0.25);
            /* after the step (euler swaps buffers) a new view sees the new state */
            assert_int_equal(pj_sim_field_view(s, "u", &v), PJ_OK);
            double first = single ? *(float *)v.data : *(double *)v.data;
            assert_true(first == 0.25);
            pj_sim_free(s);
        }
    }
    pj_problem_free(pr);
}

/* Statuses have texts; the GPU back end without a GPU is "unavailable", not a crash. */
static void statuses_and_unavailable_backends(void **state)
{
    (void)state;
    for (int st = PJ_OK; st <= PJ_ERR_UNSUPPORTED; st++) {
        assert_non_null(pj_strerror((pj_status)st));
        assert_string_not_equal(pj_strerror((pj_status)st), "unknown status");
    }
    assert_string_equal(pj_strerror((pj_status)99), "unknown status");
    /* the numbers of the back ends are their places in the back-end table */
    static const struct { const char *name; pj_backend b; } bes[] = {
        {"interp", PJ_BACKEND_INTERP}, {"cpu", PJ_BACKEND_CPU}, {"cuda", PJ_BACKEND_CUDA}};
    for (int i = 0; i < 3; i++) {
        pj_backend b;
        assert_int_equal(pj_backend_by_name(bes[i].name, &b), 0);
        assert_int_equal(b, bes[i].b);
        assert_non_null(strstr(pj_backend_names(), bes[i].name));
    }
    pj_backend none;
    assert_int_equal(pj_backend_by_name("gpu", &none), -1);
    pj_problem *pr;
    assert_int_equal(pj_problem_compile("decay.pde", decay, strlen(decay), &pr, NULL), PJ_OK);
    pj_sim *s = NULL;
    char err[256] = "";
    pj_sim_options o = {.backend = (pj_backend)7, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
    assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_ERR_INPUT);
    assert_null(s);
    o.backend = PJ_BACKEND_CUDA;
    setenv("PDEJIT_LIBCUDA", "/nonexistent/libcuda.so.1", 1); /* as on a machine without a GPU */
    assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_ERR_UNAVAILABLE);
    unsetenv("PDEJIT_LIBCUDA");
    assert_null(s);
    assert_non_null(strstr(err, "no CUDA device"));
    pj_problem_free(pr);
    /* a capability the back end does not declare: refused before any device is looked for, with
       the back end and the capability named, never "no device" */
    const char *implicit = "mesh grid(nx = 8, Lx = 1)\nfield u = 1\neq dt(u) = -u\ntime dt = 0.1, steps = 2, scheme = beuler\n";
    assert_int_equal(pj_problem_compile("imp.pde", implicit, strlen(implicit), &pr, NULL), PJ_OK);
    setenv("PDEJIT_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_ERR_UNSUPPORTED);
    unsetenv("PDEJIT_LIBCUDA");
    assert_null(s);
    assert_string_equal(err, "the cuda back end cannot solve implicit schemes or steady problems yet (beuler): use --backend cpu");
    o.decompose = 1;
    assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_ERR_UNSUPPORTED);
    assert_string_equal(err, "the cuda back end cannot run over MPI yet: use --backend cpu");
    pj_problem_free(pr);
}

/* ---- hot swap ---------------------------------------------------------------------------- */

static const char *swappable =
    "mesh grid(nx = 8)\nconst c = 3\nparam k = 1\nfunc r(s) = k\nfield u = x\nfield v = 0\n"
    "eq dt(u) = r(u)\neq dt(v) = c\non left: u = 0\non right: dn(u) = 0\n"
    "time dt = 0.125, until = 1, scheme = rk2\n";

static pj_sim *swap_sim(pj_problem **pr, pj_backend be)
{
    assert_int_equal(pj_problem_compile("swap.pde", swappable, strlen(swappable), pr, NULL), PJ_OK);
    pj_sim_options o = {.backend = be, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
    pj_sim *s;
    char err[256];
    assert_int_equal(pj_sim_create(*pr, &o, &s, err, sizeof err), PJ_OK);
    return s;
}

static void field_values(pj_sim *s, const char *name, double *out) { assert_int_equal(pj_sim_get_field(s, name, out), PJ_OK); }

/* A func, an eq, a const and a boundary condition redefined between runs: the fields keep their
 * state and go on with the new definitions (du/dt = r(u) is exact in any explicit scheme). */
static void redefinitions_take_effect(void **state)
{
    (void)state;
    for (int be = 0; be < 2; be++) {
        pj_problem *pr;
        pj_sim *s = swap_sim(&pr, be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP);
        char err[256], *diag = NULL;
        double u[8], v[8];
        assert_int_equal(pj_sim_advance(s, 0.125, 1, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_redefine(s, "func r(s) = 2*k", &diag), PJ_OK);
        assert_null(diag);
        assert_int_equal(pj_sim_set_param(s, "k", 1.5), PJ_OK); /* params stay params */
        assert_int_equal(pj_sim_advance(s, 0.125, 2, err, sizeof err), PJ_OK);
        field_values(s, "u", u);
        for (int i = 0; i < 8; i++) assert_true(fabs(u[i] - ((i + 0.5) / 8 + 1 + 3)) < 1e-14);
        /* an eq and a const, in one text */
        assert_int_equal(pj_sim_redefine(s, "const c = -1\neq dt(u) = 0", &diag), PJ_OK);
        assert_int_equal(pj_sim_advance(s, 0.125, 3, err, sizeof err), PJ_OK);
        field_values(s, "u", u);
        field_values(s, "v", v);
        for (int i = 0; i < 8; i++) {
            assert_true(fabs(u[i] - ((i + 0.5) / 8 + 4)) < 1e-14);
            assert_true(fabs(v[i] - (3 + 3 - 1)) < 1e-14);
        }
        /* a boundary condition: u = 10 on the left makes lap(u) see it */
        assert_int_equal(pj_sim_redefine(s, "eq dt(u) = lap(u)\non left: u = 10", &diag), PJ_OK);
        double before[8];
        field_values(s, "u", before);
        assert_int_equal(pj_sim_advance(s, 0.001, 3.001, err, sizeof err), PJ_OK);
        field_values(s, "u", u);
        /* one Heun step of the heat equation at the first cell, ghost = 2*10 - u0 */
        double h = 1.0 / 8, g = 20 - before[0], l0 = (g - 2 * before[0] + before[1]) / (h * h);
        double y0 = before[0] + 0.001 * l0, y1 = before[1] + 0.001 * (before[0] - 2 * before[1] + before[2]) / (h * h);
        double gy = 20 - y0, ly = (gy - 2 * y0 + y1) / (h * h);
        assert_true(fabs(u[0] - (0.5 * before[0] + 0.5 * (y0 + 0.001 * ly))) < 1e-9);
        assert_int_equal(pj_sim_steps(s), 8 + 8 + 8 + 1);
        pj_sim_free(s);
        pj_problem_free(pr);
    }
}

/* A side whose kind of condition changes (none, so dn(u) = 0 by mirroring, to u = 2): the ghost
 * fill follows the new rule from the next step (one Euler step: ghost = 2*2 - u7). */
static void redefined_sides_are_filled_by_their_new_rule(void **state)
{
    (void)state;
    const char *text = "mesh grid(nx = 8)\nfield u = x\neq dt(u) = lap(u)\non left: u = 0\n"
                       "time dt = 0.001, until = 1, scheme = euler\n";
    for (int be = 0; be < 2; be++) {
        pj_problem *pr;
        assert_int_equal(pj_problem_compile("side.pde", text, strlen(text), &pr, NULL), PJ_OK);
        pj_sim_options o = {.backend = be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, .threads = 1};
        pj_sim *s;
        char err[256], *diag = NULL;
        assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_redefine(s, "on right: u = 2", &diag), PJ_OK);
        double u[8], before[8], h = 1.0 / 8;
        field_values(s, "u", before);
        assert_int_equal(pj_sim_advance(s, 0.001, 0.001, err, sizeof err), PJ_OK);
        field_values(s, "u", u);
        assert_true(fabs(u[7] - (before[7] + 0.001 * (before[6] - 2 * before[7] + (4 - before[7])) / (h * h))) < 1e-12);
        pj_sim_free(s);
        pj_problem_free(pr);
    }
}

/* A broken or impossible redefinition says why, against its own text, and changes nothing. */
static void bad_redefinitions_leave_the_run(void **state)
{
    (void)state;
    pj_problem *pr;
    pj_sim *s = swap_sim(&pr, PJ_BACKEND_CPU);
    char err[256], *diag = NULL;
    assert_int_equal(pj_sim_redefine(s, "func r(s) = 2 *", &diag), PJ_ERR_INPUT);
    assert_non_null(diag);
    assert_non_null(strstr(diag, "<redefine>:1:"));
    assert_non_null(strstr(diag, "func r(s) = 2 *\n"));
    free(diag);
    assert_int_equal(pj_sim_redefine(s, "\nfunc r(s) = kk", &diag), PJ_ERR_INPUT);
    assert_non_null(strstr(diag, "<redefine>:2:13: error: undefined name 'kk'; did you mean 'k'?"));
    free(diag);
    assert_int_equal(pj_sim_redefine(s, "mesh grid(nx = 9)", &diag), PJ_ERR_INPUT);
    assert_non_null(strstr(diag, "<redefine>:1:1: error: a running simulation can take new func"));
    free(diag);
    assert_int_equal(pj_sim_redefine(s, "eq dt(u) = lap(lap(u))", &diag), PJ_ERR_INPUT);
    assert_non_null(strstr(diag, "<redefine>: error: "));
    assert_non_null(strstr(diag, "ghost"));
    free(diag);
    /* the first definition still runs: du/dt = k = 1 */
    assert_int_equal(pj_sim_advance(s, 0.125, 1, err, sizeof err), PJ_OK);
    double u[8];
    field_values(s, "u", u);
    for (int i = 0; i < 8; i++) assert_true(fabs(u[i] - ((i + 0.5) / 8 + 1)) < 1e-14);
    pj_sim_free(s);
    pj_problem_free(pr);
}

typedef struct advance_job { pj_sim *s; double t_end; pj_status st; } advance_job;
static void *advance_far(void *arg)
{
    advance_job *j = arg;
    char err[256];
    j->st = pj_sim_advance(j->s, 1.0 / 1024, j->t_end, err, sizeof err);
    return NULL;
}

/* Redefined from another thread while pj_sim_advance steps: swapped at a step boundary, so
 * u(T) = u0 + ts + 2 (T - ts) with ts a whole number of steps. The redefinition's kernels are
 * compiled once beforehand (the cache then serves them), so the swap does not race a compile
 * against the run; should a loaded machine still finish the run first, it is tried again with a
 * run four times as long (at most three times). */
static void redefinition_while_stepping(void **state)
{
    (void)state;
    /* 16384 cells: a run of ~1 s on either back end, long enough to redefine in its middle */
    const char *big = "mesh grid(nx = 16384)\nfunc r(s) = 1\nfield u = x\neq dt(u) = r(u)\n"
                      "time dt = 0.125, until = 1, scheme = rk2\n";
    const char *redefined = "mesh grid(nx = 16384)\nfunc r(s) = 2\nfield u = x\neq dt(u) = r(u)\n"
                            "time dt = 0.125, until = 1, scheme = rk2\n";
    for (int be = 0; be < 2; be++) {
        pj_sim_options o = {.backend = be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
        char err[256];
        pj_problem *warm;
        pj_sim *ws;
        assert_int_equal(pj_problem_compile("warm.pde", redefined, strlen(redefined), &warm, NULL), PJ_OK);
        assert_int_equal(pj_sim_create(warm, &o, &ws, err, sizeof err), PJ_OK);
        pj_sim_free(ws);
        pj_problem_free(warm);
        double T = be ? 16 : 1, ts = 0; /* 16384 or 1024 steps */
        for (int attempt = 0; attempt < 3; attempt++, T *= 4) {
            pj_problem *pr;
            assert_int_equal(pj_problem_compile("big.pde", big, strlen(big), &pr, NULL), PJ_OK);
            pj_sim *s;
            assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_OK);
            advance_job j = {s, T, PJ_ERR_INPUT};
            pthread_t th;
            assert_int_equal(pthread_create(&th, NULL, advance_far, &j), 0);
            while (pj_sim_steps(s) < 8) usleep(100); /* (a racy read, for the test only) */
            char *diag = NULL;
            assert_int_equal(pj_sim_redefine(s, "func r(s) = 2", &diag), PJ_OK);
            pthread_join(th, NULL);
            assert_int_equal(j.st, PJ_OK);
            double *u = malloc(sizeof *u * 16384);
            field_values(s, "u", u);
            double x3 = 3.5 / 16384;
            ts = 2 * T - (u[3] - x3); /* u0 + ts + 2 (T - ts) */
            double steps = ts * 1024;
            print_message("%s: swapped at t = %.6g (after step %.0f of %.0f)\n", be ? "cpu" : "interp", ts, steps, T * 1024);
            assert_true(ts > 0 && ts <= T);
            assert_true(fabs(steps - round(steps)) < 1e-6);
            for (int i = 0; i < 16384; i += 97) assert_true(fabs((u[i] - (i + 0.5) / 16384) - (u[3] - x3)) < 1e-9);
            free(u);
            pj_sim_free(s);
            pj_problem_free(pr);
            if (ts < T) break; /* swapped within the run */
        }
        assert_true(ts < T);
    }
}

static long resident_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* 1000 swaps between two definitions: the kernels swapped out are released (resident memory
 * after 1000 swaps within a few MB of that after 100; not measured under AddressSanitizer,
 * whose quarantine keeps freed memory, but its leak check runs). */
static void thousand_swaps_leave_memory_flat(void **state)
{
    (void)state;
    pj_problem *pr;
    pj_sim *s = swap_sim(&pr, PJ_BACKEND_CPU);
    char err[256], *diag = NULL;
    long at100 = 0;
    for (int i = 1; i <= 1000; i++) {
        assert_int_equal(pj_sim_redefine(s, i % 2 ? "func r(s) = 2" : "func r(s) = 1 + 0*s", &diag), PJ_OK);
        assert_int_equal(pj_sim_advance(s, 0.125, pj_sim_time(s) + 0.125, err, sizeof err), PJ_OK);
        if (i == 100) at100 = resident_kb();
    }
    long at1000 = resident_kb();
    print_message("resident: %ld kB after 100 swaps, %ld kB after 1000\n", at100, at1000);
#if !defined(__SANITIZE_ADDRESS__)
    assert_true(at1000 - at100 < 8 * 1024);
#endif
    /* 500 steps at 2 and 500 at 1 */
    double u[8];
    field_values(s, "u", u);
    assert_true(fabs(u[0] - (0.5 / 8 + 0.125 * 1500)) < 1e-9);
    pj_sim_free(s);
    pj_problem_free(pr);
}

/* Runs that would take more than 1e15 steps or never end are PJ_ERR_INPUT before any step,
 * through pj_sim_run and pj_sim_advance alike; a problem that does not fit in memory is
 * PJ_ERR_MEMORY from pj_sim_create, with the numbers. */
static void refused_before_the_first_step(void **state)
{
    (void)state;
    const char *ode = "mesh grid(nx = 2)\nfield u\neq dt(u) = 1\ntime dt = 1e308, steps = 10\n";
    pj_problem *pr;
    assert_int_equal(pj_problem_compile("ode.pde", ode, strlen(ode), &pr, NULL), PJ_OK);
    pj_sim *s;
    char err[256];
    assert_int_equal(pj_sim_create(pr, NULL, &s, err, sizeof err), PJ_OK);
    pj_run_options ro = pj_run_options_default();
    pj_run_result res;
    assert_int_equal(pj_sim_run(s, &ro, &res, err, sizeof err), PJ_ERR_INPUT);
    assert_string_equal(err, "10 steps of dt = 1e+308 end at t = inf: the end time must be finite");
    ro.dt = 1e-300;
    ro.steps = -1;
    ro.until = 1;
    assert_int_equal(pj_sim_run(s, &ro, &res, err, sizeof err), PJ_ERR_INPUT);
    assert_string_equal(err, "dt = 1e-300 to t = 1 makes 1e+300 steps, more than the 1e+15 a run may take");
    assert_int_equal(pj_sim_advance(s, 1e-300, 1, err, sizeof err), PJ_ERR_INPUT);
    assert_string_equal(err, "dt = 1e-300 to t = 1 makes 1e+300 steps, more than the 1e+15 a run may take");
    assert_int_equal(pj_sim_advance(s, 1, INFINITY, err, sizeof err), PJ_ERR_INPUT);
    assert_string_equal(err, "the end time t = inf must be finite");
    assert_int_equal(pj_sim_advance(s, 0.5, 2, err, sizeof err), PJ_OK);
    assert_int_equal(pj_sim_advance(s, 1e-17, 3, err, sizeof err), PJ_ERR_INPUT);
    assert_string_equal(err, "dt = 1e-17 from t = 2 to t = 3 makes 1e+17 steps, more than the 1e+15 a run may take");
    /* few steps, but each too small to move t = 2 (its spacing is 4.4e-16) */
    assert_int_equal(pj_sim_advance(s, 1e-16, 2.000000000000001, err, sizeof err), PJ_ERR_INPUT);
    assert_string_equal(err, "dt = 1e-16 is below the resolution of t = 2: a step would not move the time");
    assert_int_equal(pj_sim_steps(s), 4);
    pj_sim_free(s);
    pj_problem_free(pr);
    const char *big = "mesh grid(nx = 20000, ny = 20000)\nfield u = 1\nfield v = 0\nfield w = 0\n"
                      "eq dt(u) = lap(u)\neq dt(v) = lap(v)\neq dt(w) = lap(w)\ntime dt = 0.001, steps = 2, scheme = rk4\n";
    assert_int_equal(pj_problem_compile("big.pde", big, strlen(big), &pr, NULL), PJ_OK);
    setenv("PDEJIT_MEMORY_AVAILABLE", "22.9e9", 1);
    for (int be = 0; be < 2; be++) {
        pj_sim_options o = {.backend = be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
        s = NULL;
        assert_int_equal(pj_sim_create(pr, &o, &s, err, sizeof err), PJ_ERR_MEMORY);
        assert_null(s);
        assert_string_equal(err, "the problem needs 38.4 GB (12 buffers of 3.2 GB); 22.9 GB are available");
    }
    unsetenv("PDEJIT_MEMORY_AVAILABLE");
    pj_problem_free(pr);
}

/* pj_sim_interrupt stops pj_sim_run and pj_sim_advance at the next step boundary with
 * PJ_INTERRUPTED (here from the run's own between-steps hook after the 5th step, and before a
 * run); the flag is spent by the run it stopped, and the next one goes to its end. */
typedef struct interrupter { pj_sim *sim; int steps, at; } interrupter;

static void interrupt_at(void *ctx)
{
    interrupter *it = ctx;
    if (++it->steps == it->at) pj_sim_interrupt(it->sim);
}

static void interrupt_stops_at_a_step(void **state)
{
    (void)state;
    char *dir = tu_tempdir("api-interrupt"), dump[1024];
    snprintf(dump, sizeof dump, "%s/end.csv", dir);
    pj_problem *pr;
    assert_int_equal(pj_problem_compile("decay.pde", decay, strlen(decay), &pr, NULL), PJ_OK);
    pj_sim *s;
    char err[256];
    assert_int_equal(pj_sim_create(pr, NULL, &s, err, sizeof err), PJ_OK);
    interrupter it = {s, 0, 5};
    pj_run_options ro = pj_run_options_default();
    ro.dump_path = dump;
    ro.between_steps = interrupt_at;
    ro.between_ctx = &it;
    pj_run_result res;
    assert_int_equal(pj_sim_run(s, &ro, &res, err, sizeof err), PJ_INTERRUPTED);
    assert_string_equal(err, "interrupted at step 5, t = 0.005");
    assert_int_equal(res.steps, 5);
    assert_int_equal(pj_sim_steps(s), 5);
    assert_int_equal(access(dump, F_OK), -1); /* not the end's state: no dump */
    assert_string_equal(pj_strerror(PJ_INTERRUPTED), "interrupted");
    pj_sim_interrupt(s); /* before a call: it stops before its first step */
    assert_int_equal(pj_sim_advance(s, 0.001, 0.5, err, sizeof err), PJ_INTERRUPTED);
    assert_int_equal(pj_sim_steps(s), 5);
    assert_int_equal(pj_sim_advance(s, 0.001, 0.01, err, sizeof err), PJ_OK);
    assert_true(pj_sim_time(s) == 0.01);
    pj_sim_free(s);
    pj_problem_free(pr);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mesh_centres_and_faces),
        cmocka_unit_test(run_both_backends),
        cmocka_unit_test(errors_are_statuses),
        cmocka_unit_test(field_views_alias),
        cmocka_unit_test(statuses_and_unavailable_backends),
        cmocka_unit_test(redefinitions_take_effect),
        cmocka_unit_test(redefined_sides_are_filled_by_their_new_rule),
        cmocka_unit_test(bad_redefinitions_leave_the_run),
        cmocka_unit_test(redefinition_while_stepping),
        cmocka_unit_test(thousand_swaps_leave_memory_flat),
        cmocka_unit_test(refused_before_the_first_step),
        cmocka_unit_test(interrupt_stops_at_a_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
