/* test_implicit_steady.c — steady solves that converge (issue 28 item 6; runtime/implicit_steady.c):
 * where Newton from the initial fields fails, pseudo-transient continuation (TSPSEUDO) reaches the
 * steady state. Three problems on which Newton alone fails today (shown with -pj_pseudo false, the
 * behaviour before): FiPy's tanh1D (examples/cahnHilliard/tanh1D.py), an Allen-Cahn front between
 * walls held at -1 and 1 from u = 0, and a nonlinear Poisson problem -div((1 + u^2) grad u) = f
 * with a manufactured solution from an oscillating initial field. Each steady answer is checked
 * against the same problem marched in time to its end (bdf2 under error control) to 1e-6, and
 * against its exact solution to the mesh's accuracy; the report line names the continuation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define MAX_ROWS 1024

/* Runs src (as NAME.pde in tu_dir) with --verbose and the arguments `args`; the exit status, the
 * output (malloc'd) in *out, and, on success, column `col` of the dump in v. */
static int run(const char *name, const char *src, const char *args, char **out, int col, double *v, int *rows)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.pde", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(src, f);
    fclose(f);
    int rc = tu_pdejit(out, "run %s.pde --verbose --out none --dump %s.csv %s", name, name, args);
    if (rc) return rc;
    snprintf(path, sizeof path, "%s/%s.csv", tu_dir, name);
    char *csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    *rows = 0;
    for (char *line = strchr(csv, '\n'); line && line[1] && *rows < MAX_ROWS; line = strchr(line + 1, '\n')) {
        char *q = line + 1, *end;
        for (int c = 0; c < col; c++) q = strchr(q, ',') + 1;
        v[(*rows)++] = strtod(q, &end);
        assert_true(end != q);
    }
    free(csv);
    return 0;
}

/* `src` ends in "steady\n" followed by its solver statement; `march` replaces the steady statement. */
typedef struct steady_case {
    const char *name, *src, *march;
    int col;                       /* the unknown's column in the dump (after the coordinates) */
    double (*exact)(int i);        /* the exact steady state at cell i */
    double exact_bound;            /* its distance allowed (the mesh's error, FiPy's bound for tanh1D) */
} steady_case;

static double logistic(int i) { return 1 / (1 + exp(-(i + 0.5) * 0.04)); }
static double front(int i) { return tanh(((i + 0.5) / 200 - 0.5) / (sqrt(2) * 0.02)); }
static double poisson(int i) { return sin(M_PI * ((i % 32) + 0.5) / 32) * sin(M_PI * ((i / 32) + 0.5) / 32); }

static char *with(const char *src, const char *from, const char *to)
{
    const char *at = strstr(src, from);
    assert_non_null(at);
    char *s = malloc(strlen(src) + strlen(to) + 1);
    sprintf(s, "%.*s%s%s", (int)(at - src), src, to, at + strlen(from));
    return s;
}

static void steady_reaches(const steady_case *c)
{
    static double u[MAX_ROWS], m[MAX_ROWS];
    char *out = NULL;
    int rows = 0, mrows = 0;
    /* Newton alone (the behaviour before the continuation) fails from the initial fields */
    int rc = run(c->name, c->src, "--solver-options '-pj_pseudo false'", &out, c->col, u, &rows);
    printf("%s, Newton alone: exit %d: %s", c->name, rc, strstr(out, "pdejit: run failed") ? strstr(out, "pdejit: run failed") : out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "pdejit: run failed: the steady solve did not converge: Newton stopped after "));
    free(out);
    rc = run(c->name, c->src, "", &out, c->col, u, &rows);
    if (rc) fail_msg("%s: exit %d:\n%s", c->name, rc, out);
    const char *line = strstr(out, "pdejit: steady solve: ");
    assert_non_null(line);
    long long newton, linear, failed, steps, pnewton;
    double residual;
    assert_int_equal(sscanf(line, "pdejit: steady solve: %lld Newton iterations, %lld linear iterations, final residual "
                            "norm %lg (Newton from the initial fields failed after %lld; pseudo-transient continuation: "
                            "%lld pseudo-time steps, %lld Newton iterations)", &newton, &linear, &residual, &failed,
                            &steps, &pnewton), 6);
    printf("%s: %.*s\n", c->name, (int)strcspn(line, "\n"), line);
    assert_true(steps > 0 && failed + pnewton == newton);
    free(out);
    char *march = with(c->src, "steady\n", c->march);
    rc = run(c->name, march, "", &out, c->col, m, &mrows);
    if (rc) fail_msg("%s marched: exit %d:\n%s", c->name, rc, out);
    free(out);
    free(march);
    assert_int_equal(rows, mrows);
    double to_march = 0, to_exact = 0;
    for (int i = 0; i < rows; i++) {
        to_march = fmax(to_march, fabs(u[i] - m[i]));
        to_exact = fmax(to_exact, fabs(u[i] - c->exact(i)));
    }
    printf("%s: max |steady - marched| = %.3g, max |steady - exact| = %.3g (bound %g)\n", c->name, to_march, to_exact,
           c->exact_bound);
    assert_true(to_march <= 1e-6);
    assert_true(to_exact <= c->exact_bound);
}

/* FiPy's examples/cahnHilliard/tanh1D.py: 1000 cells on [0, 40], phi = 1/2 and lap(phi) = 0 on the
 * left, phi = 1 and lap(phi) = 0 on the right, from phi = 1; FiPy marches 100 growing steps and
 * checks 1 / (1 + exp(-x)) to 1e-4. Newton alone stops after 50 iterations. */
static void fipy_tanh1d(void **state)
{
    (void)state;
    steady_case c = {"tanh1d",
                     "mesh grid(nx = 1000, Lx = 40)\nfield phi = 1\n"
                     "eq dt(phi) = div((1 - 6*phi*(1 - phi))*grad(phi)) - lap(lap(phi))\n"
                     "on left: phi = 0.5, lap(phi) = 0\non right: phi = 1, lap(phi) = 0\nsteady\nsolver rtol = 1e-13\n",
                     "time dt = 0.001, until = 20000, scheme = bdf2, adapt = 1e-6\n", 1, logistic, 1e-4};
    steady_reaches(&c);
}

/* An Allen-Cahn front, eps = 0.02, walls held at -1 and 1, from u = 0 (an unstable state: Newton's
 * first step diverges); the front settles in the middle, tanh((x - 1/2) / (sqrt(2) eps)). */
static void allen_cahn_front(void **state)
{
    (void)state;
    steady_case c = {"front",
                     "mesh grid(nx = 200, Lx = 1)\nparam eps = 0.02\nfield u = 0\neq dt(u) = eps^2*lap(u) + u - u^3\n"
                     "on left: u = -1\non right: u = 1\nsteady\nsolver rtol = 1e-12\n",
                     "time dt = 0.001, until = 200, scheme = bdf2, adapt = 1e-7\n", 1, front, 3e-3};
    steady_reaches(&c);
}

/* -div((1 + u^2) grad u) = f on the unit square, u = 0 on the sides, f made for u = sin(pi x) sin(pi y),
 * from u = 10 sin(7 pi x) sin(5 pi y): Newton's first linear solve fails (the Jacobian's advective
 * part 2 u grad u, large there). */
static void nonlinear_poisson(void **state)
{
    (void)state;
    steady_case c = {"poisson",
                     "mesh grid(nx = 32, ny = 32, Lx = 1, Ly = 1)\nfunc s(x, y) = sin(pi*x)*sin(pi*y)\n"
                     "func g2(x, y) = pi^2*(cos(pi*x)^2*sin(pi*y)^2 + sin(pi*x)^2*cos(pi*y)^2)\n"
                     "field u = 10*sin(7*pi*x)*sin(5*pi*y)\n"
                     "eq dt(u) = div((1 + u^2)*grad(u)) + 2*pi^2*s(x,y)*(1 + s(x,y)^2) - 2*s(x,y)*g2(x,y)\n"
                     "on all: u = 0\nsteady\nsolver rtol = 1e-12\n",
                     "time dt = 1e-5, until = 10, scheme = bdf2, adapt = 1e-7\n", 2, poisson, 2e-3};
    steady_reaches(&c);
}

/* Where Newton converges from the initial fields (Bratu's problem below its fold, from u = 0) nothing
 * changes: the same iterations and answer with the continuation turned off, no continuation in the
 * report, and -pj_pseudo is an option the run used (--strict-options passes). */
static void newton_alone_where_it_converges(void **state)
{
    (void)state;
    static double u[MAX_ROWS], v[MAX_ROWS];
    const char *bratu = "mesh grid(nx = 32, ny = 32, Lx = 1, Ly = 1)\nparam lambda = 6.5\nfield u = 0\n"
                        "eq dt(u) = lap(u) + lambda*exp(u)\non all: u = 0\nsteady\nsolver rtol = 1e-12\n";
    char *a = NULL, *b = NULL;
    int rows = 0, rows_b = 0;
    assert_int_equal(run("bratu", bratu, "", &a, 2, u, &rows), 0);
    assert_int_equal(run("bratu", bratu, "--solver-options '-pj_pseudo false' --strict-options", &b, 2, v, &rows_b), 0);
    const char *la = strstr(a, "pdejit: steady solve: "), *lb = strstr(b, "pdejit: steady solve: ");
    assert_non_null(la);
    assert_non_null(lb);
    printf("bratu: %.*s\n", (int)strcspn(la, "\n"), la);
    assert_null(strstr(a, "pseudo"));
    assert_int_equal(strcspn(la, ";"), strcspn(lb, ";")); /* the same counts and residual */
    assert_memory_equal(la, lb, strcspn(la, ";"));
    assert_int_equal(rows, 32 * 32);
    assert_memory_equal(u, v, sizeof *u * (size_t)rows);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fipy_tanh1d),
        cmocka_unit_test(allen_cahn_front),
        cmocka_unit_test(nonlinear_poisson),
        cmocka_unit_test(newton_alone_where_it_converges),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
