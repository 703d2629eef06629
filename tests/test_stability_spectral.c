/* test_stability_spectral.c — the explicit stability check (runtime/stability.c, spectral.c)
 * against true limits on problems whose spectrum is known independently: it must accept every run
 * at 0.9x its true limit and refuse every run at 1.2x, under euler, rk2, rk3 and rk4.
 *
 * The true limit of a scheme with stability polynomial R (R(z) = sum_{k <= p} z^k / k!) is the
 * largest dt with |R(dt lambda)| <= 1 for every eigenvalue lambda of the Jacobian (growth,
 * lambda > 0 real, is the equation's and does not count), each ray's first exit found here by a
 * scan and a bisection on R. The spectra come from:
 * - the Fourier symbol of constant-coefficient problems on periodic meshes (diffusion
 *   -2D/h^2 (1 - cos theta), centred advection -i c/h sin theta, upwind -c/h (1 - e^{-i theta}),
 *   a reaction's constant), every mode of the mesh;
 * - the separable spectra of diffusion between walls (cell-centred: a Dirichlet axis has
 *   4 sin^2(k pi / 2n) / h^2, k = 1..n, a Neumann axis the same with k = 0..n-1);
 * - for 1D problems with walls and a nonlinear or non-symmetric right-hand side, the Jacobian by
 *   central differences of the right-hand side (one euler step of dt = 1 through the engine, no
 *   derivative code involved), a tridiagonal matrix whose off-diagonal products are positive, so
 *   similar to a symmetric one, whose extreme eigenvalue Sturm bisection finds. */
#include "testutil.h"
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "solve.h"
#include "spectral.h"
#include "stability.h"

static const char *schemes[] = {"euler", "rk2", "rk3", "rk4"};

/* R(z) of the p-stage scheme of order p (p = 1..4). */
static double complex amplification(int p, double complex z)
{
    double complex term = 1, sum = 1;
    for (int k = 1; k <= p; k++) {
        term *= z / k;
        sum += term;
    }
    return sum;
}

/* The first dt at which dt*lambda leaves |R| <= 1 along its ray (INFINITY for growth or zero). */
static double ray_exit(int p, double complex lambda)
{
    double mod = cabs(lambda);
    if (!(mod > 0) || (creal(lambda) > 0 && fabs(cimag(lambda)) < 1e-12 * mod)) return INFINITY;
    double complex dir = lambda / mod;
    const double step = 5e-3;
    for (double r = step; r < 20; r += step) {
        if (cabs(amplification(p, r * dir)) <= 1 + 1e-13) continue;
        double good = r - step, bad = r;
        for (int i = 0; i < 80; i++) {
            double mid = 0.5 * (good + bad);
            if (cabs(amplification(p, mid * dir)) <= 1 + 1e-13) good = mid;
            else bad = mid;
        }
        return good / mod;
    }
    return INFINITY;
}

typedef struct spectrum {
    double complex *lambda;
    int n, cap;
} spectrum;

static void add(spectrum *s, double complex l)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->lambda = realloc(s->lambda, sizeof *s->lambda * (size_t)s->cap);
        assert_non_null(s->lambda);
    }
    s->lambda[s->n++] = l;
}

static double true_limit(const spectrum *s, int p)
{
    double best = INFINITY;
    for (int i = 0; i < s->n; i++) {
        double r = ray_exit(p, s->lambda[i]);
        if (r < best) best = r;
    }
    return best;
}

/* Axis kinds for the symbol and the separable spectra. */
enum { PERIODIC, DIRICHLET, NEUMANN };

typedef struct axes {
    int dim, n[3], kind[3];
    double h[3], D, c[3], k; /* diffusion, velocity, reaction constant (dt(u) = ... + k u) */
    int upwind;
} axes;

/* 4 sin^2 (theta/2) for axis a's mode j (diffusion's symbol times -h^2/D), and its advection part. */
static double complex mode(const axes *a, int ax, int j)
{
    double th;
    if (a->kind[ax] == PERIODIC) th = 2 * M_PI * j / a->n[ax];
    else if (a->kind[ax] == DIRICHLET) th = M_PI * (j + 1) / a->n[ax];
    else th = M_PI * j / a->n[ax];
    double complex l = -a->D * 4 * sin(th / 2) * sin(th / 2) / (a->h[ax] * a->h[ax]);
    double ch = a->c[ax] / a->h[ax];
    if (a->upwind) l += -ch * (1 - cexp(-I * th));
    else l += -I * ch * sin(th);
    return l;
}

static spectrum separable(const axes *a)
{
    spectrum s = {0};
    int n1 = a->dim > 1 ? a->n[1] : 1, n2 = a->dim > 2 ? a->n[2] : 1;
    for (int k = 0; k < n2; k++)
        for (int j = 0; j < n1; j++)
            for (int i = 0; i < a->n[0]; i++) {
                double complex l = a->k + mode(a, 0, i);
                if (a->dim > 1) l += mode(a, 1, j);
                if (a->dim > 2) l += mode(a, 2, k);
                add(&s, l);
            }
    return s;
}

/* F(u) of a 1D explicit problem: one euler step of dt = 1 from u through the engine, minus u. */
static void rhs(engine *e, const double *u, double *f, int n)
{
    char err[512] = "";
    assert_int_equal(engine_set_field(e, 0, u, err, sizeof err), 0);
    if (engine_step(e, 1.0, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(engine_get_field(e, 0, f, err, sizeof err), 0);
    for (int i = 0; i < n; i++) f[i] -= u[i];
}

/* Eigenvalues of the symmetric tridiagonal (d, e) below x (Sturm's count). */
static int below(const double *d, const double *e2, int n, double x)
{
    int count = 0;
    double q = 1;
    for (int i = 0; i < n; i++) {
        q = d[i] - x - (i ? e2[i - 1] / q : 0);
        if (q == 0) q = -1e-300;
        if (q < 0) count++;
    }
    return count;
}

/* The 1D problem's Jacobian at its initial state by central differences, checked tridiagonal
   with positive off-diagonal products; its least and largest eigenvalues into the spectrum. */
static spectrum tridiagonal_truth(const char *src_euler, int n)
{
    pj_program *p = compile_text(src_euler);
    char err[512] = "";
    engine_options o = {.threads = 1};
    engine *e = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
    if (!e) fail_msg("%s", err);
    assert_int_equal(engine_init(e, err, sizeof err), 0);
    double *u0 = malloc(sizeof *u0 * (size_t)n * 5), *u = u0 + n, *fp = u + n, *fm = fp + n, *J = NULL;
    J = calloc((size_t)n * (size_t)n, sizeof *J);
    assert_true(u0 && J);
    assert_int_equal(engine_get_field(e, 0, u0, err, sizeof err), 0);
    for (int j = 0; j < n; j++) {
        double eps = 1e-5 * (1 + fabs(u0[j]));
        memcpy(u, u0, sizeof *u * (size_t)n);
        u[j] = u0[j] + eps;
        rhs(e, u, fp, n);
        u[j] = u0[j] - eps;
        rhs(e, u, fm, n);
        for (int i = 0; i < n; i++) J[i * n + j] = (fp[i] - fm[i]) / (2 * eps);
    }
    double *d = malloc(sizeof *d * (size_t)n * 2), *e2 = d + n, bound = 0;
    assert_non_null(d);
    for (int i = 0; i < n; i++) {
        double row = 0;
        for (int j = 0; j < n; j++) {
            row += fabs(J[i * n + j]);
            if (abs(i - j) > 1 && fabs(J[i * n + j]) > 1e-6 * fabs(J[i * n + i])) fail_msg("not tridiagonal at %d, %d", i, j);
        }
        if (row > bound) bound = row;
        d[i] = J[i * n + i];
        if (i + 1 < n) {
            e2[i] = J[i * n + i + 1] * J[(i + 1) * n + i];
            assert_true(e2[i] >= 0);
        }
    }
    spectrum s = {0};
    for (int end = 0; end < 2; end++) { /* the least eigenvalue (count 0 below it), the largest */
        double lo = -bound - 1, hi = bound + 1;
        for (int it = 0; it < 200; it++) {
            double mid = 0.5 * (lo + hi);
            if (below(d, e2, n, mid) > (end ? n - 1 : 0)) hi = mid;
            else lo = mid;
        }
        add(&s, 0.5 * (lo + hi));
    }
    free(d);
    free(J);
    free(u0);
    engine_destroy(e);
    program_free(p);
    return s;
}

/* A problem: its source with the scheme as %s, and its spectrum (s) or, with tridiagonal set, the
   source's 1D Jacobian's (n cells). */
typedef struct problem {
    const char *name, *src;
    axes a;
    int tridiagonal, n;
} problem;

/* The check on `src_fmt` (the scheme as %s) against the spectrum s, under every scheme; each
   scheme's estimate into found[k] when found is not NULL. */
static void check_spectrum(const char *name, const char *src_fmt, const spectrum *sp, double *found)
{
    char src[2048], err[1024] = "";
    const spectrum s = *sp;
    for (int k = 0; k < 4; k++) {
        snprintf(src, sizeof src, src_fmt, schemes[k]);
        pj_program *p = compile_text(src);
        engine_options o = {.threads = 1};
        engine *e = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
        if (!e) fail_msg("%s", err);
        assert_int_equal(engine_init(e, err, sizeof err), 0);
        double truth = true_limit(&s, k + 1), limit = 0, biggest = 0;
        for (int i = 0; i < s.n; i++) biggest = fmax(biggest, cabs(s.lambda[i]));
        assert_true(truth > 0 && isfinite(truth));
        if (stability_limit(e, &limit, err, sizeof err) != 0) fail_msg("%s, %s: %s", name, schemes[k], err);
        if (found) found[k] = limit;
        if (truth * biggest < 1e-2) { /* unstable at any dt (euler and rk2 on the imaginary axis) */
            print_message("%-44s %-5s unstable at any dt, estimate %.3g\n", name, schemes[k], limit);
            if (stability_check(e, 0.05 / biggest, err, sizeof err) != 1)
                fail_msg("%s, %s: dt = %g accepted; the scheme is unstable at any dt", name, schemes[k], 0.05 / biggest);
            engine_destroy(e);
            program_free(p);
            continue;
        }
        print_message("%-44s %-5s true %.6g, estimate %.6g (x%.4f)\n", name, schemes[k], truth, limit,
                      limit / truth);
        int at_09 = stability_check(e, 0.9 * truth, err, sizeof err);
        int at_12 = stability_check(e, 1.2 * truth, err, sizeof err);
        if (at_09 != 0) fail_msg("%s, %s: 0.9x the true limit %g refused (%s)", name, schemes[k], truth, err);
        if (at_12 != 1) fail_msg("%s, %s: 1.2x the true limit %g accepted", name, schemes[k], truth);
        engine_destroy(e);
        program_free(p);
    }
}

static void check_problem(const problem *pb)
{
    char src[2048];
    snprintf(src, sizeof src, pb->src, "euler");
    spectrum s = pb->tridiagonal ? tridiagonal_truth(src, pb->n) : separable(&pb->a);
    check_spectrum(pb->name, pb->src, &s, NULL);
    free(s.lambda);
}

#define TIME "time dt = 1e-6, steps = 1, scheme = %s\n"
#define TIME_LATER "time dt = 1e-6, steps = 1, scheme = %%s\n" /* TIME through one more printf */

static const problem problems[] = {
    {"1D diffusion, periodic", "mesh grid(nx = 64, Lx = 2)\nperiodic x\nfield u = sin(3.14159265*x)\n"
     "eq dt(u) = 0.3*lap(u)\n" TIME, {1, {64}, {PERIODIC}, {2.0 / 64}, 0.3, {0}, 0, 0}, 0, 0},
    {"1D diffusion, Dirichlet walls", "mesh grid(nx = 50)\nfield u = x*(1 - x)\neq dt(u) = 2*lap(u)\n"
     "on all: u = 0\n" TIME, {1, {50}, {DIRICHLET}, {1.0 / 50}, 2, {0}, 0, 0}, 0, 0},
    {"1D diffusion, Neumann walls", "mesh grid(nx = 8)\nfield u = x\neq dt(u) = lap(u)\non all: dn(u) = 0\n" TIME,
     {1, {8}, {NEUMANN}, {1.0 / 8}, 1, {0}, 0, 0}, 0, 0},
    {"2D diffusion, periodic, hx != hy", "mesh grid(nx = 32, ny = 16, Lx = 1, Ly = 2)\nperiodic x, y\n"
     "field u = sin(6.2831853*x)\neq dt(u) = 0.5*lap(u)\n" TIME,
     {2, {32, 16}, {PERIODIC, PERIODIC}, {1.0 / 32, 2.0 / 16}, 0.5, {0}, 0, 0}, 0, 0},
    {"2D diffusion, Dirichlet x, periodic y", "mesh grid(nx = 20, ny = 12)\nperiodic y\nfield u = x\n"
     "eq dt(u) = lap(u)\non left, right: u = 0\n" TIME,
     {2, {20, 12}, {DIRICHLET, PERIODIC}, {1.0 / 20, 1.0 / 12}, 1, {0}, 0, 0}, 0, 0},
    {"3D diffusion, periodic", "mesh grid(nx = 8, ny = 6, nz = 4, Lx = 1, Ly = 1, Lz = 2)\nperiodic x, y, z\n"
     "field u = x*y\neq dt(u) = 0.1*lap(u)\n" TIME,
     {3, {8, 6, 4}, {PERIODIC, PERIODIC, PERIODIC}, {1.0 / 8, 1.0 / 6, 2.0 / 4}, 0.1, {0}, 0, 0}, 0, 0},
    {"3D diffusion, Neumann walls", "mesh grid(nx = 6, ny = 5, nz = 4, Lx = 1, Ly = 1, Lz = 1)\nfield u = x*y*z\n"
     "eq dt(u) = lap(u)\non all: dn(u) = 0\n" TIME,
     {3, {6, 5, 4}, {NEUMANN, NEUMANN, NEUMANN}, {1.0 / 6, 1.0 / 5, 1.0 / 4}, 1, {0}, 0, 0}, 0, 0},
    {"1D diffusion and decay, periodic", "mesh grid(nx = 40)\nperiodic x\nfield u = cos(6.2831853*x)\n"
     "eq dt(u) = 0.01*lap(u) - 30*u\n" TIME, {1, {40}, {PERIODIC}, {1.0 / 40}, 0.01, {0}, -30, 0}, 0, 0},
    {"2D Fisher growth at u = 0, periodic", "mesh grid(nx = 16, ny = 16)\nperiodic x, y\nfield u = 0\n"
     "eq dt(u) = 0.01*lap(u) + 4*u*(1 - u)\n" TIME,
     {2, {16, 16}, {PERIODIC, PERIODIC}, {1.0 / 16, 1.0 / 16}, 0.01, {0}, 4, 0}, 0, 0},
    {"3D Allen-Cahn at u = 1, periodic", "mesh grid(nx = 6, ny = 6, nz = 6)\nperiodic x, y, z\nfield u = 1\n"
     "eq dt(u) = 0.002*lap(u) + u - u^3\n" TIME,
     {3, {6, 6, 6}, {PERIODIC, PERIODIC, PERIODIC}, {1.0 / 6, 1.0 / 6, 1.0 / 6}, 0.002, {0}, -2, 0}, 0, 0},
    {"2D nonlinear diffusion at a uniform state", "mesh grid(nx = 24, ny = 12)\nperiodic x, y\nfield u = 0.5\n"
     "eq dt(u) = div((1 + u^2)*grad(u))\n" TIME,
     {2, {24, 12}, {PERIODIC, PERIODIC}, {1.0 / 24, 1.0 / 12}, 1.25, {0}, 0, 0}, 0, 0},
    {"1D nonlinear diffusion D0(1-u), FiPy mesh1D", "mesh grid(nx = 50, Lx = 50)\nfield u = 0\n"
     "eq dt(u) = div((1 - u)*grad(u))\non left: u = 1\non right: u = 0\n" TIME, {0}, 1, 50},
    {"1D nonlinear diffusion 1+u^2, Neumann walls", "mesh grid(nx = 80)\nfield u = 0.5 + 0.4*sin(6.2831853*x)\n"
     "eq dt(u) = div((1 + 3*u^2)*grad(u))\non all: dn(u) = 0\n" TIME, {0}, 1, 80},
    {"1D advection-diffusion, centred, Peclet 1", "mesh grid(nx = 32)\nperiodic x\nfield u = sin(6.2831853*x)\n"
     "eq dt(u) = 0.05*lap(u) - div(1.6*u)\n" TIME, {1, {32}, {PERIODIC}, {1.0 / 32}, 0.05, {1.6}, 0, 0}, 0, 0},
    {"1D advection-diffusion, centred, Peclet 4", "mesh grid(nx = 64)\nperiodic x\nfield u = sin(6.2831853*x)\n"
     "eq dt(u) = 0.01*lap(u) - div(2.56*u)\n" TIME, {1, {64}, {PERIODIC}, {1.0 / 64}, 0.01, {2.56}, 0, 0}, 0, 0},
    {"1D advection, centred, periodic", "mesh grid(nx = 40)\nperiodic x\nfield u = sin(6.2831853*x)\n"
     "eq dt(u) = -div(3*u)\n" TIME, {1, {40}, {PERIODIC}, {1.0 / 40}, 0, {3}, 0, 0}, 0, 0},
    {"2D advection-diffusion, centred, periodic", "mesh grid(nx = 64, ny = 48)\nperiodic x, y\nfield u = x*y\n"
     "eq dt(u) = 0.004*lap(u) - div(normal(1, -0.7)*u)\n" TIME,
     {2, {64, 48}, {PERIODIC, PERIODIC}, {1.0 / 64, 1.0 / 48}, 0.004, {1, -0.7}, 0, 0}, 0, 0},
    {"2D advection-diffusion, upwind, periodic", "mesh grid(nx = 24, ny = 20)\nperiodic x, y\nfield u = x\n"
     "eq dt(u) = 0.002*lap(u) - div(upwind(u, normal(1, 0.5))*normal(1, 0.5))\n" TIME,
     {2, {24, 20}, {PERIODIC, PERIODIC}, {1.0 / 24, 1.0 / 20}, 0.002, {1, 0.5}, 0, 1}, 0, 0},
    {"1D advection-diffusion, upwind, walls", "mesh grid(nx = 64)\nfield u = x\n"
     "eq dt(u) = 0.01*lap(u) - div(upwind(u, 1.0)*1.0)\non left: u = 0\non right: dn(u) = 0\n" TIME, {0}, 1, 64},
};

static void accept_at_09_refuse_at_12(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof problems / sizeof *problems; i++) check_problem(&problems[i]);
}

/* Cahn-Hilliard with the chemical potential as an unknown of its own (FiPy's mesh2DCoupled.py):
 * dt(c) = M lap(mu), 0 = mu - (f'(c) - kappa lap(c)). An explicit scheme evaluates mu from c before
 * every stage, so the system it steps is the fourth-order equation dt(c) = M lap(f'(c) - kappa
 * lap(c)), and the check must find that equation's limit (the Jacobian with mu eliminated by the
 * chain rule, runtime/spectral_reduce.c), not the DAE's. At a uniform c0 both Laplacians share
 * their eigenvectors (Fourier modes on a periodic mesh, cosines between zero-flux walls), so the
 * spectrum is -M s (f''(c0) + kappa s) for each eigenvalue -s of the discrete Laplacian (mode()
 * with D = 1); f'(c) = c^3 - c, f''(1) = 2. At a random state the coupled form's estimate must
 * equal the single equation's. */
static void algebraic_chain_rule(void **state)
{
    (void)state;
    static const struct { const char *name, *mesh; axes a; } cases[] = {
        {"2D Cahn-Hilliard, mu an unknown, periodic", "mesh grid(nx = 16, ny = 12, Lx = 1, Ly = 1.5)\nperiodic x, y\n",
         {2, {16, 12}, {PERIODIC, PERIODIC}, {1.0 / 16, 1.5 / 12}, 1, {0}, 0, 0}},
        {"1D Cahn-Hilliard, mu an unknown, walls", "mesh grid(nx = 40)\n", {1, {40}, {NEUMANN}, {1.0 / 40}, 1, {0}, 0, 0}},
    };
    const double M = 0.5, kappa = 0.002, fpp = 2;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const axes *a = &cases[i].a;
        spectrum s = {0};
        for (int k = 0; k < (a->dim > 1 ? a->n[1] : 1); k++)
            for (int j = 0; j < a->n[0]; j++) {
                double lap = -creal(mode(a, 0, j) + (a->dim > 1 ? mode(a, 1, k) : 0));
                add(&s, -M * lap * (fpp + kappa * lap));
            }
        char coupled[1024], single[1024];
        for (int random = 0; random < 2; random++) {
            const char *c0 = random ? "1 + 0.3*randn()" : "1";
            snprintf(coupled, sizeof coupled, "%sfield c = %s, mu = 0\neq dt(c) = %g*lap(mu)\n"
                     "eq 0 = mu - (c^3 - c - %g*lap(c))\n" TIME_LATER, cases[i].mesh, c0, M, kappa);
            snprintf(single, sizeof single, "%sfield c = %s\neq dt(c) = %g*lap(c^3 - c - %g*lap(c))\n" TIME_LATER,
                     cases[i].mesh, c0, M, kappa);
            double fc[4], fs[4];
            if (!random) { /* against the true limit, both forms */
                check_spectrum(cases[i].name, coupled, &s, fc);
                check_spectrum("  the same as one fourth-order equation", single, &s, fs);
            } else
                for (int k = 0; k < 4; k++) { /* the coupled form's estimate is the single equation's */
                    for (int form = 0; form < 2; form++) {
                        char src[1024], err[1024] = "";
                        snprintf(src, sizeof src, form ? single : coupled, schemes[k]);
                        pj_program *p = compile_text(src);
                        engine_options o = {.threads = 1};
                        engine *e = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
                        if (!e) fail_msg("%s", err);
                        assert_int_equal(engine_init(e, err, sizeof err), 0);
                        if (stability_limit(e, form ? &fs[k] : &fc[k], err, sizeof err) != 0) fail_msg("%s", err);
                        engine_destroy(e);
                        program_free(p);
                    }
                    print_message("  at c = 1 + 0.3 randn, %-5s coupled %.9g, single %.9g\n", schemes[k], fc[k], fs[k]);
                }
            for (int k = 0; k < 4; k++)
                if (!(fabs(fc[k] - fs[k]) <= 1e-9 * fs[k]))
                    fail_msg("%s, %s (%s state): coupled %.12g, single equation %.12g", cases[i].name, schemes[k],
                             random ? "random" : "uniform", fc[k], fs[k]);
        }
        free(s.lambda);
    }
}

/* The check again at every output time: nonlinear diffusion D = 1 + u^2 with a source, so that u
 * grows about as 4t and the limit h^2 / (2 D) (Neumann walls, h = 0.05) falls from 0.00125 / 1.0
 * at t = 0 through about 0.00125 / 1.2 at t = 0.1 to about 0.00125 / 1.7 at t = 0.2: dt = 0.001
 * passes the checks at t = 0 and 0.1 and is refused at t = 0.2, the run failing (exit 1) before
 * it blows up at t = 0.236 as it does without the check. */
static void checked_again_at_outputs(void **state)
{
    (void)state;
    char path[4096], *out = NULL;
    snprintf(path, sizeof path, "%s/grow.pde", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("mesh grid(nx = 20)\nfield u = 0.1*x^2\neq dt(u) = div((1 + u^2)*grad(u)) + 4\non all: dn(u) = 0\n"
          "time dt = 0.001, until = 1, scheme = euler\noutput every = 0.1, format = csv\n", f);
    fclose(f);
    assert_int_equal(tu_pdejit(&out, "run grow.pde --out o"), 1);
    print_message("%s", out);
    assert_non_null(strstr(out, "at t = 0.2: dt = 0.001 exceeds the explicit stability limit (about 0.000"));
    free(out);
    assert_int_equal(tu_pdejit(&out, "run grow.pde --out o --no-stability-check"), 1);
    assert_non_null(strstr(out, "non-finite value"));
    free(out);
}

/* A symmetric Jacobian takes Lanczos's recurrence (spectral.c): it must find the limit Arnoldi
 * finds (m.general) on the same matrix, and the true limit where the spectrum is known: the
 * tridiagonal (1, -2, 1) of order n has eigenvalues -2 + 2 cos(j pi / (n + 1)), and along the
 * negative real axis the schemes are stable up to |dt lambda| = 2, 2, 2.5127, 2.7853. The second
 * matrix, a periodic 2D Laplacian plus a random diagonal (growth in places), is assembled in a
 * scrambled order with its diagonal in two parts, as stability.c's folded rows may be. */
static double limit_of(int which, int general, pj_scheme s)
{
    int nx = 48, n = which == 0 ? 500 : nx * nx;
    spectral_matrix m = {.n = n, .most = 8 * (int64_t)n, .general = general};
    uint64_t x = 12345;
    for (int q = 0; q < n; q++) {
        int i = (int)(((int64_t)q * 7919) % n); /* every row once, out of order */
        if (which == 0) {
            spectral_add(&m, i, i, -2);
            if (i > 0) spectral_add(&m, i, i - 1, 1);
            if (i + 1 < n) spectral_add(&m, i, i + 1, 1);
            continue;
        }
        int a = i % nx, b = i / nx;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double r = (double)(x >> 11) * 0x1p-53 * 1.5 - 1; /* in [-1, 0.5) */
        spectral_add(&m, i, i, -2.0 * 0.5);
        spectral_add(&m, i, b * nx + (a + 1) % nx, 1);
        spectral_add(&m, i, ((b + 1) % nx) * nx + a, 1);
        spectral_add(&m, i, i, r - 2.0 * 1.5);
        spectral_add(&m, i, b * nx + (a + nx - 1) % nx, 1);
        spectral_add(&m, i, ((b + nx - 1) % nx) * nx + a, 1);
    }
    double limit = -1;
    if (spectral_limit(&m, s, 0, &limit) != 0) fail_msg("no estimate");
    spectral_free(&m);
    return limit;
}

static void lanczos_as_arnoldi(void **state)
{
    (void)state;
    const pj_scheme ss[] = {PJ_EULER, PJ_RK2, PJ_RK3, PJ_RK4};
    const double beta[] = {2, 2, 2.5127453266183286, 2.785293563405282};
    double lmin = 2 + 2 * cos(M_PI / 501);
    for (int which = 0; which < 2; which++)
        for (int k = 0; k < 4; k++) {
            double lanczos = limit_of(which, 0, ss[k]), arnoldi = limit_of(which, 1, ss[k]);
            print_message("matrix %d, %s: Lanczos %.15g, Arnoldi %.15g\n", which, schemes[k], lanczos, arnoldi);
            if (!(fabs(lanczos - arnoldi) <= 1e-9 * arnoldi)) fail_msg("%s: %.17g against %.17g", schemes[k], lanczos, arnoldi);
            if (which == 0 && !(lanczos >= 0.9 * beta[k] / lmin && lanczos <= beta[k] / lmin))
                fail_msg("%s: %.17g, true limit %.17g", schemes[k], lanczos, beta[k] / lmin);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accept_at_09_refuse_at_12),
        cmocka_unit_test(algebraic_chain_rule),
        cmocka_unit_test(checked_again_at_outputs),
        cmocka_unit_test(lanczos_as_arnoldi),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
