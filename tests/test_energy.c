/* test_energy.c — free energies (contract section 9, issue 27 item 1): `energy F = ...`,
 * delta(F, u) and integral(F).
 *
 *   delta_equals_hand_written   delta(F, c) against the chemical potential written by hand, on the
 *                               interpreter: Allen-Cahn and Cahn-Hilliard, 1D to 3D, param and
 *                               constant coefficients, a func in the density
 *   energy_never_rises          implicit (beuler) and small explicit Allen-Cahn and Cahn-Hilliard
 *                               runs: the monitor integral(F) never rises from one monitor time to
 *                               the next, and equals the discrete energy computed here from the
 *                               dumped field (an independent loop over cells and faces)
 *   delta_is_energy_gradient    delta(F, c) written into a field, cell by cell against central
 *                               differences of the discrete energy computed here: dE/du_i / V
 *   errors                      each error at the user's text, message and caret */
#include "testutil.h"
#include "solve.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- delta against the hand-written chemical potential ------------------------------------ */

/* src with "@EQ@" replaced by eq (malloc'd). */
static char *with_eq(const char *src, const char *eq)
{
    const char *at = strstr(src, "@EQ@");
    assert_non_null(at);
    size_t n = strlen(src) + strlen(eq) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - src), src, eq, at + 4);
    return s;
}

/* Runs both equations of the problem on the interpreter; returns the largest relative difference
 * of the final fields and counts the values equal to the bit in *equal. */
static double compare(const char *src, const char *eq_energy, const char *eq_hand, int64_t *cells, int64_t *equal)
{
    char *a = with_eq(src, eq_energy), *b = with_eq(src, eq_hand);
    solved *sa = solve(a, BE_INTERP, 0, 1, NULL), *sb = solve(b, BE_INTERP, 0, 1, NULL);
    assert_int_equal(sa->status, 0);
    assert_int_equal(sb->status, 0);
    assert_true(sa->cells == sb->cells);
    double d = field_diff(sa->u[0], sb->u[0], sa->cells, NULL);
    *cells = sa->cells;
    *equal = 0;
    for (int64_t i = 0; i < sa->cells; i++) *equal += sa->u[0][i] == sb->u[0][i];
    /* the run went somewhere: the field moved away from its start by more than round-off */
    double moved = 0;
    for (int64_t i = 0; i < sa->cells; i++) moved = fmax(moved, fabs(sa->u[0][i] - sa->u[0][0]));
    assert_true(moved > 1e-3);
    solved_free(sa);
    solved_free(sb);
    free(a);
    free(b);
    return d;
}

static void delta_equals_hand_written(void **state)
{
    (void)state;
    static const struct { const char *name, *src, *energy, *hand; double tol; } cases[] = {
        /* the contract's density: W c^2 (1-c)^2 + kappa/2 |grad c|^2, Cahn-Hilliard, periodic 2D */
        {"ch-2d", "mesh grid(nx = 24, ny = 20, Lx = 24, Ly = 20)\nperiodic x, y\n"
                  "param W = 1, kappa = 1.5, M = 1\n"
                  "energy F = W*c^2*(1 - c)^2 + kappa/2*grad2(c)\n"
                  "field c = 0.5 + 0.1*sin(0.5*x + 0.3)*cos(0.6*y)\n@EQ@\n"
                  "time dt = 0.01, until = 0.5, scheme = rk2\n",
         "eq dt(c) = div(M*grad(delta(F, c)))",
         "eq dt(c) = div(M*grad(2*W*c*(1 - c)*(1 - 2*c) - kappa*lap(c)))", 1e-12},
        /* Allen-Cahn, zero flux, 1D, a constant coefficient */
        {"ac-1d", "mesh grid(nx = 64, Lx = 16)\nconst k = 0.8\nparam L = 2\n"
                  "energy F = (c^2 - 1)^2/4 + k/2*grad2(c)\n"
                  "field c = tanh(x - 8) + 0.2*cos(x)\n@EQ@\n"
                  "time dt = 0.01, until = 1, scheme = rk3\n",
         "eq dt(c) = -L*delta(F, c)", "eq dt(c) = -L*((c^2 - 1)*c - k*lap(c))", 1e-12},
        /* c^4/4 - c^2/2: every derivative exact in floating point, so the bits agree */
        {"ac-3d-exact", "mesh grid(nx = 8, ny = 6, nz = 5)\nparam kappa = 0.3\n"
                        "energy F = c^4/4 - c^2/2 + kappa/2*grad2(c)\n"
                        "field c = 0.9*sin(x + 2*y + 3*z)\n@EQ@\n"
                        "time dt = 0.02, until = 0.4, scheme = euler\n",
         "eq dt(c) = -delta(F, c)", "eq dt(c) = -(c^3 - c - kappa*lap(c))", 0},
        /* a func and a math function in the density (the log of a regular solution) */
        {"func-log", "mesh grid(nx = 40, Lx = 10)\nperiodic x\nparam T = 0.6, chi = 2.5, kappa = 1\n"
                     "func g(c) = T*(c*log(c) + (1 - c)*log(1 - c)) + chi*c*(1 - c)\n"
                     "energy F = g(c) + kappa/2*grad2(c)\n"
                     "field c = 0.5 + 0.2*sin(2*pi*x/10)\n@EQ@\n"
                     "time dt = 0.0002, until = 0.1, scheme = rk2\n",
         "eq dt(c) = lap(delta(F, c))",
         "eq dt(c) = lap(T*(log(c) - log(1 - c)) + chi*(1 - 2*c) - kappa*lap(c))", 1e-10},
        /* a coefficient of the field, k(c) = (1 + c^2)/2 through a func: on each face of the cell
           k'(mean c)/2*((c_j - c)/h)^2, and -2*div(k*grad(c)) */
        {"kappa(c)-1d", "mesh grid(nx = 50, Lx = 10)\nfunc k(c) = (1 + c^2)/2\n"
                        "energy F = (c^2 - 1)^2/4 + k(c)*grad2(c)\n"
                        "field c = tanh(x - 5) + 0.3*sin(3*x)\n@EQ@\n"
                        "time dt = 0.005, until = 0.5, scheme = rk2\n",
         "eq dt(c) = -delta(F, c)",
         "eq dt(c) = -((c^2 - 1)*c + (c + c[1])/2/2*((c[1] - c)/dx)^2 + (c + c[-1])/2/2*((c[-1] - c)/dx)^2"
         " - div((1 + c^2)*grad(c)))", 1e-12},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int64_t cells, equal;
        double d = compare(cases[i].src, cases[i].energy, cases[i].hand, &cells, &equal);
        printf("%-12s %lld cells: largest relative difference %.3g, %lld of them equal to the bit\n", cases[i].name,
               (long long)cells, d, (long long)equal);
        if (!(d <= cases[i].tol)) fail_msg("%s: delta differs from the hand-written form by %g", cases[i].name, d);
        if (cases[i].tol == 0) assert_true(equal == cells);
    }
}

/* ---- the discrete energy never rises --------------------------------------------------------- */

typedef struct rows { double t[256], e[256]; int n; } rows;

static void read_monitor(const char *dir, rows *r)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/monitor.csv", tu_dir, dir);
    char *text = tu_read_file(path, NULL);
    if (!text) fail_msg("no %s", path);
    r->n = 0;
    char *line = strchr(text, '\n');
    while (line && line[1] && r->n < 256) {
        long step;
        assert_int_equal(sscanf(line + 1, "%lf,%ld,%lf", &r->t[r->n], &step, &r->e[r->n]), 3);
        r->n++;
        line = strchr(line + 1, '\n');
    }
    free(text);
}

/* The discrete energy of snapshot k of DIR (x,y,c rows, x fastest; nx x ny cells of h x h):
 * sum_cells h^2 f(c) + sum_faces k2 ((c_j - c_i)/h)^2 h^2, the faces between neighbours (and
 * across the wrap when periodic), f = W c^2 (1-c)^2, k2 = (kappa + kb*m^2)/2 with m the mean of
 * the face's two cells. */
/* The discrete energy of c (nx x ny cells of h x h, x fastest): sum_cells h^2 f(c) + sum_faces k2
 * ((c_j - c_i)/h)^2 h^2, the faces between neighbours (and across the wrap when periodic),
 * f = W c^2 (1-c)^2, k2 = (kappa + kb*m^2)/2 with m the mean of the face's two cells. */
static double energy_of(const double *c, int nx, int ny, double h, double W, double kappa, double kb, int periodic)
{
    double E = 0, V = h * h;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            double u = c[j * nx + i];
            E += V * W * u * u * (1 - u) * (1 - u);
            if (i + 1 < nx || periodic) {
                double n = c[j * nx + (i + 1) % nx], g = (n - u) / h, m = (u + n) / 2;
                E += (kappa + kb * m * m) / 2 * g * g * V;
            }
            if (j + 1 < ny || periodic) {
                double n = c[((j + 1) % ny) * nx + i], g = (n - u) / h, m = (u + n) / 2;
                E += (kappa + kb * m * m) / 2 * g * g * V;
            }
        }
    return E;
}

/* Column `col` (0-based, after x and y) of snapshot k of DIR, nx*ny values (malloc'd). */
static double *read_snapshot(const char *dir, int k, int col, int n)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/snapshot_%06d.csv", tu_dir, dir, k);
    char *text = tu_read_file(path, NULL);
    if (!text) fail_msg("no %s", path);
    double *c = malloc(sizeof *c * (size_t)n);
    char *line = strchr(text, '\n');
    for (int i = 0; i < n; i++) {
        assert_non_null(line);
        double v[6];
        assert_true(sscanf(line + 1, "%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) >= 3 + col);
        c[i] = v[2 + col];
        line = strchr(line + 1, '\n');
    }
    free(text);
    return c;
}

static double energy_of_snapshot(const char *dir, int k, int nx, int ny, double h, double W, double kappa, double kb,
                                 int periodic)
{
    double *c = read_snapshot(dir, k, 0, nx * ny);
    double E = energy_of(c, nx, ny, h, W, kappa, kb, periodic);
    free(c);
    return E;
}

/* Writes src to DIR.pde in tu_dir and runs it into DIR. */
static void run_text(const char *name, const char *src)
{
    char path[1200], *out;
    snprintf(path, sizeof path, "%s/%s.pde", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(src, f);
    fclose(f);
    if (tu_pdejit(&out, "run %s --out %s --quiet", path, name) != 0) fail_msg("%s: %s", name, out);
    free(out);
}

/* Two fields: f = c^2(1-c)^2 + e^2(1-e)^2 + g c e^2 and the faces (kappa + kb*mean(e)^2)/2 ((c_j -
 * c_i)/h)^2 + ke/2 ((e_j - e_i)/h)^2, each times V; zero flux. ce holds c then e (n each). */
static double energy_of2(const double *ce, int nx, int ny, double h, double g, double kappa, double kb, double ke)
{
    const double *c = ce, *e = ce + nx * ny;
    double E = 0, V = h * h;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            int at = j * nx + i;
            double u = c[at], w = e[at];
            E += V * (u * u * (1 - u) * (1 - u) + w * w * (1 - w) * (1 - w) + g * u * w * w);
            for (int a = 0; a < 2; a++) {
                if (a == 0 ? i + 1 >= nx : j + 1 >= ny) continue;
                int nb = a == 0 ? at + 1 : at + nx;
                double gc = (c[nb] - u) / h, ge = (e[nb] - w) / h, m = (w + e[nb]) / 2;
                E += V * ((kappa + kb * m * m) / 2 * gc * gc + ke / 2 * ge * ge);
            }
        }
    return E;
}

/* The same for two coupled fields, whose gradient coefficient of c reads e: delta(F, e) has the
 * coefficient's derivative on each face, delta(F, c) -2*div(k*grad(c)). */
static void delta_is_energy_gradient_two_fields(void **state)
{
    (void)state;
    const int nx = 10, ny = 9, n = nx * ny;
    const double h = 0.5, g = 0.8, kappa = 0.6, kb = 1.1, ke = 0.9;
    char src[2048];
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, ny = %d, Lx = %g, Ly = %g)\n"
             "param g = %g, kappa = %g, kb = %g, ke = %g\n"
             "func well(u) = u^2*(1 - u)^2\n"
             "energy F = well(c) + well(eta) + g*c*eta^2 + (kappa + kb*eta^2)/2*grad2(c) + ke/2*grad2(eta)\n"
             "field c = 0.5 + 0.3*sin(1.3*x + 0.4)*cos(0.9*y), eta = 0.4 + 0.3*cos(0.7*x - 1.1*y), dc = 0, de = 0\n"
             "eq dt(c) = 0\neq dt(eta) = 0\neq dt(dc) = delta(F, c)\neq dt(de) = delta(F, eta)\n"
             "time dt = 0.0009765625, steps = 1, scheme = euler\noutput every = 0.0009765625, format = csv\n",
             nx, ny, nx * h, ny * h, g, kappa, kb, ke);
    run_text("two", src);
    double *ce = malloc(sizeof *ce * (size_t)(2 * n)), *d = malloc(sizeof *d * (size_t)(2 * n));
    for (int f = 0; f < 2; f++) {
        double *a = read_snapshot("two", 1, f, n), *b = read_snapshot("two", 1, 2 + f, n);
        for (int i = 0; i < n; i++) {
            ce[f * n + i] = a[i];
            d[f * n + i] = b[i] * 1024;
        }
        free(a);
        free(b);
    }
    double worst = 0, scale = 0, eps = 1e-5, V = h * h;
    for (int i = 0; i < 2 * n; i++) scale = fmax(scale, fabs(d[i]));
    for (int i = 0; i < 2 * n; i++) {
        double v0 = ce[i];
        ce[i] = v0 + eps;
        double ep = energy_of2(ce, nx, ny, h, g, kappa, kb, ke);
        ce[i] = v0 - eps;
        double em = energy_of2(ce, nx, ny, h, g, kappa, kb, ke);
        ce[i] = v0;
        double fd = (ep - em) / (2 * eps * V), diff = fabs(fd - d[i]) / scale;
        worst = fmax(worst, diff);
        if (!(diff <= 1e-7)) fail_msg("%s cell %d: delta %.17g, dE/du/V %.17g", i < n ? "c" : "eta", i % n, d[i], fd);
    }
    printf("two fields, k of c reading eta: delta(F, c) and delta(F, eta) vs dE/du_i/V, %d cells each: %.2g of %.3g\n", n,
           worst, scale);
    free(ce);
    free(d);
}

/* delta(F, c) is exactly the gradient of the discrete energy over the cell volume: one euler step
 * of dt = 2^-10 from d = 0 writes dt*delta into d (exactly: a power of two); each cell's value against the central difference
 * (E(c + eps e_i) - E(c - eps e_i)) / (2 eps V) of the energy computed here. */
static void delta_is_energy_gradient(void **state)
{
    (void)state;
    const int nx = 12, ny = 10;
    const double h = 0.5, W = 1, kappa = 0.7;
    for (int variant = 0; variant < 4; variant++) {
        int periodic = variant & 1;
        double kb = variant & 2 ? 1.3 : 0;
        char src[2048], name[32];
        snprintf(name, sizeof name, "grad%d", variant);
        snprintf(src, sizeof src,
                 "mesh grid(nx = %d, ny = %d, Lx = %g, Ly = %g)\n%s"
                 "param W = %g, kappa = %g, kb = %g\n"
                 "energy F = W*c^2*(1 - c)^2 + (kappa + kb*c^2)/2*grad2(c)\n"
                 "field c = 0.5 + 0.3*sin(1.3*x + 0.4)*cos(0.9*y) + 0.1*cos(3.1*x - 2.3*y), d = 0\n"
                 "eq dt(c) = 0\neq dt(d) = delta(F, c)\n"
                 "time dt = 0.0009765625, steps = 1, scheme = euler\noutput every = 0.0009765625, format = csv\n",
                 nx, ny, nx * h, ny * h, periodic ? "periodic x, y\n" : "", W, kappa, kb);
        run_text(name, src);
        double *c = read_snapshot(name, 1, 0, nx * ny), *d = read_snapshot(name, 1, 1, nx * ny);
        double worst = 0, scale = 0, eps = 1e-5, V = h * h;
        for (int i = 0; i < nx * ny; i++) d[i] *= 1024; /* dt = 2^-10: d = dt*delta exactly */
        for (int i = 0; i < nx * ny; i++) scale = fmax(scale, fabs(d[i]));
        for (int i = 0; i < nx * ny; i++) {
            double c0 = c[i];
            c[i] = c0 + eps;
            double ep = energy_of(c, nx, ny, h, W, kappa, kb, periodic);
            c[i] = c0 - eps;
            double em = energy_of(c, nx, ny, h, W, kappa, kb, periodic);
            c[i] = c0;
            double fd = (ep - em) / (2 * eps * V), diff = fabs(fd - d[i]) / scale;
            worst = fmax(worst, diff);
            if (!(diff <= 1e-7)) fail_msg("%s cell %d: delta %.17g, dE/du/V %.17g", name, i, d[i], fd);
        }
        printf("%s (%s, k = (%g + %g c^2)/2): delta vs dE/du_i/V by central differences, %d cells: %.2g of max|delta| %.3g\n",
               name, periodic ? "periodic" : "zero flux", kappa, kb, nx * ny, worst, scale);
        free(c);
        free(d);
    }
}

static void run_and_check(const char *name, const char *eq, const char *scheme, double dt, double until,
                          double every, int periodic, double kb)
{
    const int nx = 24, ny = 16;
    const double h = 0.5, W = 1, kappa = 0.5;
    char src[2048];
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, ny = %d, Lx = %g, Ly = %g)\n%s"
             "param W = %g, kappa = %g, M = 1, L = 1, kb = %g\n"
             "energy F = W*c^2*(1 - c)^2 + %s*grad2(c)\n"
             "field c = 0.5 + 0.3*sin(1.3*x + 0.4)*cos(0.9*y) + 0.1*cos(3.1*x - 2.3*y)\n"
             "%s\n"
             "monitor every = %g, energy = integral(F)\n"
             "time dt = %g, until = %g, scheme = %s\n"
             "output every = %g, format = csv\n",
             nx, ny, nx * h, ny * h, periodic ? "periodic x, y\n" : "", W, kappa, kb,
             kb ? "(kappa + kb*c^2)/2" : "kappa/2", eq, every, dt, until, scheme, every);
    run_text(name, src);
    rows r;
    read_monitor(name, &r);
    assert_true(r.n >= 10);
    double worst = 0, fall = r.e[0] - r.e[r.n - 1];
    for (int k = 0; k < r.n; k++) {
        double mine = energy_of_snapshot(name, k, nx, ny, h, W, kappa, kb, periodic);
        double d = fabs(mine - r.e[k]) / fabs(mine);
        worst = fmax(worst, d);
        if (!(d <= 1e-12)) fail_msg("%s t = %g: monitor %.17g, the dumped field's energy %.17g", name, r.t[k], r.e[k], mine);
        if (k > 0 && !(r.e[k] <= r.e[k - 1])) fail_msg("%s: the energy rises from %.17g (t = %g) to %.17g (t = %g)",
                                                         name, r.e[k - 1], r.t[k - 1], r.e[k], r.t[k]);
    }
    printf("%-14s %d monitor times: E %.6g -> %.6g, never rising; monitor vs the dumped field: %.2g\n", name, r.n,
           r.e[0], r.e[r.n - 1], worst);
    assert_true(fall > 0.01 * r.e[0]); /* a run that moved */
}

static void energy_never_rises(void **state)
{
    (void)state;
    run_and_check("ac-beuler", "eq dt(c) = -L*delta(F, c)", "beuler", 0.5, 10, 0.5, 0, 0);
    run_and_check("ac-euler", "eq dt(c) = -L*delta(F, c)", "euler", 0.01, 5, 0.25, 0, 0);
    run_and_check("ch-beuler", "eq dt(c) = div(M*grad(delta(F, c)))", "beuler", 0.25, 20, 1, 1, 0);
    run_and_check("ch-beuler-nf", "eq dt(c) = div(M*grad(delta(F, c)))", "beuler", 0.25, 20, 1, 0, 0);
    run_and_check("ch-euler", "eq dt(c) = div(M*grad(delta(F, c)))", "euler", 0.002, 4, 0.2, 1, 0);
    /* a coefficient of the field: (kappa + kb*c^2)/2, on each face at the mean of its cells */
    run_and_check("ac-kc-beuler", "eq dt(c) = -L*delta(F, c)", "beuler", 0.5, 10, 0.5, 0, 1.5);
    run_and_check("ch-kc-beuler", "eq dt(c) = div(M*grad(delta(F, c)))", "beuler", 0.25, 20, 1, 1, 1.5);
    run_and_check("ch-kc-euler", "eq dt(c) = div(M*grad(delta(F, c)))", "euler", 0.001, 4, 0.2, 0, 1.5);
}

/* FiPy's coupled form with the chemical potential from the energy: mu is an algebraic unknown
 * (eq 0 = mu - delta(F, c), with and without `for mu`); the discrete energy never rises under
 * beuler, and the run agrees with the single-equation form to the solver's tolerance. */
static void coupled_chemical_potential(void **state)
{
    (void)state;
    const char *head = "mesh grid(nx = 16, ny = 16, Lx = 8, Ly = 8)\nperiodic x, y\nparam W = 1, kappa = 1, M = 1\n"
                       "energy F = W*c^2*(1 - c)^2 + kappa/2*grad2(c)\n"
                       "field c = 0.5 + 0.1*sin(2*pi*x/8)*cos(2*pi*y/8)";
    const char *tail = "monitor every = 1, energy = integral(F)\ntime dt = 1, until = 8, scheme = beuler\n"
                       "solver rtol = 1e-12\n";
    const char *forms[3][2] = {{"ch-coupled", ", mu = 0\neq dt(c) = M*lap(mu)\neq 0 = mu - delta(F, c)\n"},
                               {"ch-coupled-for", ", mu = 0\neq dt(c) = M*lap(mu)\neq 0 = mu - delta(F, c) for mu\n"},
                               {"ch-single", "\neq dt(c) = div(M*grad(delta(F, c)))\n"}};
    rows r[3];
    for (int k = 0; k < 3; k++) {
        char src[1024];
        snprintf(src, sizeof src, "%s%s%s", head, forms[k][1], tail);
        run_text(forms[k][0], src);
        read_monitor(forms[k][0], &r[k]);
        assert_int_equal(r[k].n, 9);
        for (int i = 1; i < r[k].n; i++)
            if (!(r[k].e[i] <= r[k].e[i - 1])) fail_msg("%s: the energy rose at t = %g", forms[k][0], r[k].t[i]);
    }
    for (int i = 0; i < r[2].n; i++) {
        assert_true(r[0].e[i] == r[1].e[i]); /* the same system, however the field is named */
        if (!(fabs(r[0].e[i] - r[2].e[i]) <= 1e-8 * fabs(r[2].e[i])))
            fail_msg("t = %g: coupled %.17g, single %.17g", r[0].t[i], r[0].e[i], r[2].e[i]);
    }
    printf("coupled and single-equation Cahn-Hilliard from one energy: %.12g -> %.12g, largest difference %.3g\n",
           r[2].e[0], r[2].e[8], fabs(r[0].e[8] - r[2].e[8]));
}

/* A running simulation's redefinition (redefine.c) may replace an energy: every delta() and
 * integral() of it follows, as if the problem had been written with the new one. */
static void energy_redefined(void **state)
{
    (void)state;
    const char *base = "mesh grid(nx = 16, ny = 12)\nperiodic x, y\nparam W = 1, kappa = 0.5\n"
                       "energy F = W*c^2*(1 - c)^2 + kappa/2*grad2(c)\nfield c = 0.5 + 0.1*sin(6*x)\n"
                       "eq dt(c) = lap(delta(F, c))\nmonitor every = 1, energy = integral(F)\n"
                       "time dt = 0.001, until = 1, scheme = rk2\n";
    const char *line = "energy F = 3*W*c^2*(1 - c)^2 + kappa*grad2(c)\n";
    char both[2048], direct[2048];
    snprintf(both, sizeof both, "%s%s", base, line);
    snprintf(direct, sizeof direct, "%s", base);
    char *at = strstr(direct, "energy F = ");
    size_t old_len = strcspn(at, "\n") + 1;
    memmove(at + strlen(line), at + old_len, strlen(at + old_len) + 1);
    memcpy(at, line, strlen(line));
    pj_compile_options o = {.redefine_line = 9};
    diag d1, d2;
    diag_init(&d1, "t.pde", both, strlen(both));
    diag_init(&d2, "t.pde", direct, strlen(direct));
    pj_program *p1 = compile_problem("t.pde", both, strlen(both), &d1, &o);
    pj_program *p2 = compile_problem("t.pde", direct, strlen(direct), &d2, NULL);
    if (!p1 || !p2) fail_msg("%s%s", d1.log ? d1.log : "", d2.log ? d2.log : "");
    char h1[33], h2[33], r1[33], r2[33], h0[33];
    kir_hash_hex(p1->rhs, h1);
    kir_hash_hex(p2->rhs, h2);
    kir_hash_hex(p1->reduce, r1);
    kir_hash_hex(p2->reduce, r2);
    assert_string_equal(h1, h2);
    assert_string_equal(r1, r2);
    pj_program *p0 = compile_text(base); /* and the old energy's kernel is another */
    kir_hash_hex(p0->rhs, h0);
    assert_string_not_equal(h0, h1);
    program_free(p0);
    program_free(p1);
    program_free(p2);
    diag_free(&d1);
    diag_free(&d2);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void expect_error(const char *src, const char *expected)
{
    diag d;
    diag_init(&d, "t.pde", src, strlen(src));
    pj_program *p = compile_problem("t.pde", src, strlen(src), &d, NULL);
    char want[600];
    snprintf(want, sizeof want, "t.pde:%s\n", expected);
    const char *log = d.log ? d.log : "";
    if (p || !strstr(log, want)) fail_msg("source:\n%s\nexpected: %swas:\n%s", src, want, log);
    int line, col;
    assert_int_equal(sscanf(expected, "%d:%d", &line, &col), 2);
    const char *caret_line = strchr(strstr(log, want) + strlen(want), '\n');
    assert_non_null(caret_line);
    caret_line++;
    const char *caret = strchr(caret_line, '^');
    assert_non_null(caret);
    assert_int_equal((int)(caret - caret_line), 4 + col - 1);
    diag_free(&d);
}

#define HEAD "mesh grid(nx = 10)\nparam W = 1, kappa = 1\nfield c, m\n"

static void errors(void **state)
{
    (void)state;
    expect_error(HEAD "energy F = W*c^2\neq dt(c) = -delta(F, m)\n",
                 "5:22: error: delta(F, m): field 'm' has no equation (an energy's variational derivative is taken "
                 "by a field with eq dt(m) = ...)");
    expect_error(HEAD "energy F = W*c^2\neq dt(c) = -delta(F, W)\n", "5:22: error: delta(F, W): 'W' is not a field");
    expect_error(HEAD "energy F = W*c^2 + lap(c)^2\neq dt(c) = -delta(F, c)\n",
                 "4:20: error: lap() in the density of energy 'F' has no derivative rule: an energy density is made "
                 "of fields, params, math functions, funcs of these and grad2(u)");
    expect_error(HEAD "energy F = W*c[1]^2\neq dt(c) = -delta(F, c)\n",
                 "4:14: error: a neighbour value c[...] in the density of energy 'F' has no variational derivative "
                 "here: write gradient energies as grad2(c)");
    expect_error(HEAD "eq dt(c) = lap(c) - grad2(c)\n",
                 "4:21: error: grad2() may only stand in an energy: energy NAME = ... + kappa/2*grad2(u)");
    expect_error(HEAD "energy Fa = W*c^2\neq dt(c) = -delta(Fb, c)\n", "5:19: error: unknown energy 'Fb'; did you mean 'Fa'?");
    expect_error(HEAD "eq dt(c) = -delta(G, c)\n", "4:19: error: unknown energy 'G' (define it: energy G = ...)");
    expect_error(HEAD "energy F = W*c^2 + delta(F, c)\neq dt(c) = -delta(F, c)\n",
                 "4:20: error: delta() may not stand in the density of energy 'F' (an energy is used recursively)");
    expect_error(HEAD "energy F = W*c^2\nenergy G = F + c\neq dt(c) = -delta(G, c)\n",
                 "5:12: error: energy 'F' may not stand in the density of energy 'G': write its density or add the "
                 "energies in one");
    expect_error(HEAD "energy F = W*c^2 + x/2*grad2(c)\neq dt(c) = -delta(F, c)\n",
                 "4:20: error: the coefficient of grad2(c) in energy 'F' may depend on fields, params and constants only");
    expect_error(HEAD "energy F = sqrt(1 + grad2(c))\neq dt(c) = -delta(F, c)\n",
                 "4:21: error: the coefficient of grad2(c) in energy 'F' may depend on fields, params and constants "
                 "only (the density must be linear in grad2)");
    expect_error(HEAD "energy F = W*c^2\neq dt(c) = -F\n",
                 "5:13: error: 'F' is an energy: use delta(F, u) or integral(F)");
    expect_error(HEAD "energy F = W*c^2\nenergy F = c\neq dt(c) = -delta(F, c)\n",
                 "5:8: error: energy 'F' is already defined at line 4");
    expect_error(HEAD "energy F = W*c^2 + zzz\neq dt(c) = -delta(F, c)\n", "4:20: error: undefined name 'zzz'");
    expect_error(HEAD "energy c = W\n", "4:8: error: 'c' is already defined as a field at line 3");
    expect_error(HEAD "energie F = W*c^2\n", "4:1: error: unexpected name 'energie' at the start of a statement");
    /* the hint after the caret: tests/test_parser.c syntax_error_hints */
    expect_error(HEAD "c = W\n", "4:1: error: unexpected name 'c' at the start of a statement");
    expect_error(HEAD "energy F = W*c^2\neq dt(c) = -delta(F, c)*integral(F)\n",
                 "5:25: error: integral() is a reduction over the cells: it may only stand in a monitor "
                 "(monitor NAME = integral(...))");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(delta_equals_hand_written),
        cmocka_unit_test(energy_never_rises),
        cmocka_unit_test(delta_is_energy_gradient),
        cmocka_unit_test(delta_is_energy_gradient_two_fields),
        cmocka_unit_test(energy_redefined),
        cmocka_unit_test(coupled_chemical_potential),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
