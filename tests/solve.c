/* solve.c — see solve.h. */
#include "solve.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "engine.h"
#include "testutil.h"

pj_program *compile_named(const char *name, const char *src)
{
    diag d;
    diag_init(&d, name, src, strlen(src));
    pj_program *p = compile_problem(name, src, strlen(src), &d, NULL);
    if (!p) fprintf(stderr, "%s\n%s", src, d.log);
    diag_free(&d);
    assert_non_null(p);
    return p;
}

pj_program *compile_text(const char *src) { return compile_named("t.pde", src); }

api_sim api_sim_start(const char *name, const char *src, const char *options)
{
    api_sim a = {NULL, NULL};
    char *diags = NULL, err[512];
    pj_status rc = pj_problem_compile(name, src, strlen(src), &a.problem, &diags);
    if (rc) fprintf(stderr, "%s\n", diags ? diags : "(no diagnostics)");
    free(diags);
    assert_int_equal(rc, PJ_OK);
    pj_sim_options so = {.backend = PJ_BACKEND_CPU, .threads = 1, .solver_options = options};
    rc = pj_sim_create(a.problem, &so, &a.sim, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, PJ_OK);
    return a;
}

void api_sim_end(api_sim *a, double *u, pj_solver_stats *st)
{
    if (u) assert_int_equal(pj_sim_get_field(a->sim, "u", u), PJ_OK);
    if (st) assert_int_equal(pj_sim_solver_stats(a->sim, st), PJ_OK);
    pj_sim_free(a->sim);
    pj_problem_free(a->problem);
    a->sim = NULL;
    a->problem = NULL;
}

static solved *solve_program(pj_program *p, const char *backend, const engine_options *eo, const char *sets,
                             int check_every)
{
    solved *r = calloc(1, sizeof *r);
    r->p = p;
    engine *e = engine_create(engine_backend(backend), p, eo, NULL, r->err, sizeof r->err);
    if (!e) {
        fprintf(stderr, "%s\n", r->err);
        abort();
    }
    if (sets) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", sets);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            char *eq = strchr(tok, '=');
            *eq = 0;
            if (engine_set_param(e, tok, atof(eq + 1)) < 0) abort();
        }
    }
    if (engine_init(e, r->err, sizeof r->err) < 0) abort();
    if (p->n_monitors) {
        r->mon0 = malloc(sizeof(double) * (size_t)p->n_monitors);
        r->mon1 = malloc(sizeof(double) * (size_t)p->n_monitors);
        if (engine_reduce(e, r->mon0, r->err, sizeof r->err) < 0) abort();
    }
    driver_options o = {.dt = p->dt, .until = p->until, .steps = p->steps, .check_every = check_every};
    driver_result res;
    r->status = driver_run(e, &o, &res, r->err, sizeof r->err);
    if (p->n_monitors && engine_reduce(e, r->mon1, r->err, sizeof r->err) < 0) abort();
    r->t = engine_time(e);
    r->cells = engine_cells(e);
    r->u = calloc((size_t)p->n_fields, sizeof *r->u);
    for (int f = 0; f < p->n_fields; f++) {
        r->u[f] = malloc(sizeof(double) * (size_t)r->cells);
        if (engine_get_field(e, f, r->u[f], r->err, sizeof r->err) < 0) abort();
    }
    for (int a = 0; a < 3; a++) {
        r->x[a] = malloc(sizeof(double) * (size_t)r->cells);
        for (int64_t c = 0; c < r->cells; c++) {
            int64_t idx[3] = {c % p->n[0], (c / p->n[0]) % p->n[1], c / (p->n[0] * p->n[1])};
            r->x[a][c] = a < p->dim ? program_cell_centre(p, a, idx[a]) : p->origin[a] + 0.5 * p->length[a];
        }
    }
    engine_destroy(e);
    return r;
}

solved *solve(const char *src, backend_kind be, int single, int threads, const char *sets)
{
    static const char *const names[] = {[BE_INTERP] = "interp", [BE_CPU] = "cpu", [BE_CPU_PREFETCH] = "cpu",
                                        [BE_CUDA] = "cuda"};
    engine_options eo = {.single = single, .threads = threads, .prefetch = be == BE_CPU_PREFETCH};
    return solve_program(compile_text(src), names[be], &eo, sets, 1);
}

solved *solve_named(const char *name, const char *src, const char *backend)
{
    engine_options eo = {.threads = 1};
    solved *r = solve_program(compile_named(name, src), backend, &eo, NULL, 64);
    if (r->status) fprintf(stderr, "%s\n", r->err);
    assert_int_equal(r->status, 0);
    return r;
}

double field_sum(const solved *s, int f)
{
    double sum = 0;
    for (int64_t c = 0; c < s->cells; c++) sum += s->u[f][c];
    return sum;
}

void solved_free(solved *s)
{
    if (!s) return;
    for (int f = 0; s->u && f < s->p->n_fields; f++) free(s->u[f]);
    free(s->u);
    for (int a = 0; a < 3; a++) free(s->x[a]);
    free(s->mon0);
    free(s->mon1);
    program_free(s->p);
    free(s);
}

/* ---- the table of cases ------------------------------------------------------------------ */

/* 2D, rk4, two fields, linear conditions in t and x, a dependent param (b = a/2). */
static const char prob_rk4[] =
    "mesh grid(nx = 23, ny = 17, Lx = 1.3, Ly = 0.9)\n"
    "param D = 0.01, a = 2, b = a*0.5\n"
    "field u = exp(-10*((x-0.6)^2 + (y-0.4)^2))\n"
    "field w = cos(3*x)*y\n"
    "eq dt(u) = D*lap(u) + b*u*(1 - u) - w*u\n"
    "eq dt(w) = D*lap(w) - 0.1*w + sin(t + x)\n"
    "on left: u = sin(3*t)*y\n"
    "on right: a*u + dn(u) = x*y + t\n"
    "on bottom: dn(u) = 0.5\n"
    "on top: u + 0.3*dn(u) = cos(x)\n"
    "on left, right: dn(w) = 0\n"
    "time dt = 0.002, until = 1, scheme = rk4\n";

/* 3D, euler (slots swap), halo 2, periodic x, mirror, linear in t and y. */
static const char prob_euler3d[] =
    "mesh grid(nx = 12, ny = 9, nz = 7, Lx = 1, Ly = 1, Lz = 1)\n"
    "param D = 0.001\n"
    "field u = x + 2*y*y - z\n"
    "eq dt(u) = -D*lap(lap(u)) + 0.01*u\n"
    "periodic x\n"
    "on bottom, top: dn(u) = 0\n"
    "on back: u = 1 + t\n"
    "on front: u - 0.2*dn(u) = y\n"
    "time dt = 0.001, until = 1, scheme = euler\n";

/* 2D, rk2, a fourth-order operator with second conditions (lap(u) = value) on three sides, their
 * values in t and the coordinates; halo 2. */
static const char prob_fourth_order[] =
    "mesh grid(nx = 19, ny = 13, Lx = 1, Ly = 0.7)\n"
    "param D = 0.0005\n"
    "field u = sin(3*x)*cos(2*y) + x*y\n"
    "eq dt(u) = -D*lap(lap(u)) + 0.05*lap(u)\n"
    "on left: u = 0, lap(u) = 0\n"
    "on right: u + 0.1*dn(u) = y*t, lap(u) = 2*y + sin(t)\n"
    "on bottom: dn(u) = 0.3, lap(u) = x\n"
    "on top: u = 1\n"
    "time dt = 0.0002, until = 1, scheme = rk2\n";

/* A coefficient field without an equation beside two with one, rk3. */
static const char prob_rk3_coefficient[] =
    "mesh grid(nx = 40, Lx = 2)\n"
    "param k = 0.5\n"
    "field D = 0.1 + 0.05*x\n"
    "field u = exp(-4*(x - 1)^2)\n"
    "field v = 0.2\n"
    "eq dt(u) = div(D*grad(u)) - k*u*v\n"
    "eq dt(v) = k*u*v - 0.1*v\n"
    "on left: u = 0\n"
    "on right: dn(u) = 0\n"
    "time dt = 0.001, until = 1, scheme = rk3\n";

/* 3D, rk2: fluxes of the full face gradient (gradx grady gradz: the tangential parts from the
 * neighbouring cells, corner and edge ghosts at the walls) and of its angle, periodic z, Dirichlet,
 * Neumann and Robin walls. */
static const char prob_face_gradient_3d[] =
    "mesh grid(nx = 10, ny = 8, nz = 7, Lx = 1, Ly = 0.8, Lz = 0.7)\n"
    "param D = 0.01, eps = 0.3\n"
    "field u = sin(3*x)*cos(2*y)*cos(2*pi*z/0.7) + x*y\n"
    "func a(gx, gy, gz) = 1 + eps*cos(4*atan2(gy, gx)) + eps*gz^2/(1 + gx^2 + gy^2 + gz^2)\n"
    "flux F(u) = D*a(gradx(u), grady(u), gradz(u))*normal(gradx(u), grady(u), gradz(u))\n"
    "eq dt(u) = div(F(u)) + 0.01*div(normal(grady(u) - gradz(u), gradz(u) - gradx(u), gradx(u) - grady(u)))\n"
    "periodic z\n"
    "on left: u = y\n"
    "on right: dn(u) = 0\n"
    "on bottom, top: u + 0.2*dn(u) = x*t\n"
    "time dt = 0.002, until = 1, scheme = rk2\n";

/* An energy (contract section 9) with a func, exp, tanh and a param coefficient: delta() and the
 * face sum of integral(F), which reads the neighbour above each cell, on every back end. */
static const char prob_energy[] =
    "mesh grid(nx = 20, ny = 14, Lx = 5, Ly = 3.5)\n"
    "param kappa = 0.4, a = 0.7\n"
    "func g(u) = u^4/4 - a*u^2/2 + 0.1*exp(-u^2)\n"
    "energy F = g(u) + 0.25*tanh(u) + kappa/2*grad2(u)\n"
    "field u = sin(2*x)*cos(3*y)\n"
    "on left: u = 0.5\n"
    "eq dt(u) = -delta(F, u)\n"
    "monitor every = 0.01, energy = integral(F)\n"
    "time dt = 0.002, until = 0.1, scheme = rk2\n";

/* 2D, rk3: an order-parameter array (docs/language.md "Order-parameter arrays"): an eq template
 * with sum and prod over the members, i as a value, condition templates (Dirichlet in i, Robin). */
static const char prob_array_templates[] =
    "mesh grid(nx = 18, ny = 11, Lx = 1.8, Ly = 1.1)\n"
    "param L = 1, kappa = 0.01, alpha = 2\n"
    "const N = 3\n"
    "field c = 0.5 + 0.1*sin(3*x)*cos(2*y)\n"
    "field eta[N] = 0.2*i*(1 + cos(i*x + y)) + 0.05*y\n"
    "eq dt(c) = 0.02*lap(c) - 0.1*sum(j, eta[j]^2)*c\n"
    "eq dt(eta[i]) = -L*(eta[i]^3 - eta[i] + alpha*eta[i]*(sum(j, eta[j]^2) - eta[i]^2) - kappa*lap(eta[i])) +\n"
    "                0.01*prod(k, 1 + eta[k]) + 0.001*i*c\n"
    "on left: eta[i] = 0.1*i + 0.05*sin(t)\n"
    "on right: eta[i] + 0.3*dn(eta[i]) = 0.2*y\n"
    "on bottom, top: dn(eta[i]) = 0\n"
    "time dt = 0.002, until = 1, scheme = rk3\n";

static int cmp_case(const void *a, const void *b)
{
    return strcmp(((const test_case *)a)->name, ((const test_case *)b)->name);
}

/* Appends every .pde file of DIR (in name order) to the table, named PREFIX + its name. */
static void add_samples(test_case **c, int *n, int *cap, const char *dir, const char *prefix)
{
    char folder[600];
    snprintf(folder, sizeof folder, "%s/%s", PJ_SOURCE_DIR, dir);
    DIR *d = opendir(folder);
    if (!d) abort();
    int first = *n;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 4 || strcmp(e->d_name + l - 4, ".pde")) continue;
        if (*n == *cap) {
            *cap *= 2;
            *c = realloc(*c, sizeof **c * (size_t)*cap);
            if (!*c) abort();
        }
        test_case *t = &(*c)[(*n)++];
        memset(t, 0, sizeof *t);
        char path[900];
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        snprintf(t->name, sizeof t->name, "%s%.*s", prefix, (int)(l - 4), e->d_name);
        t->text = tu_read_file(path, NULL);
        if (!t->text) abort();
    }
    closedir(d);
    qsort(*c + first, (size_t)(*n - first), sizeof **c, cmp_case);
}

/* 2D, rk3: an algebraic equation evaluated before each stage (compiler/algebraic.c), its coefficient
 * reading c, its right side t; periodic along x, mu with conditions of its own along y. */
static const char prob_algebraic[] =
    "mesh grid(nx = 16, ny = 12, Lx = 8, Ly = 6)\n"
    "periodic x\n"
    "param M = 0.5, kappa = 0.8\n"
    "field c = 0.5 + 0.1*sin(0.8*x)*cos(0.7*y) + 0.05*y/6, mu = 0\n"
    "eq dt(c) = M*lap(mu) + 0.01*mu*c\n"
    "eq 0 = (2 + c^2)*mu - (c^3 - c - kappa*lap(c)) - 0.1*sin(t)\n"
    "on bottom: mu = 0.05\n"
    "on top: dn(mu) = 0.1\n"
    "time dt = 0.002, until = 0.2, scheme = rk3\n";

/* The table: samples/, then the problems above, then (implicit) samples/implicit/. */
static int cases_table(test_case **cases, int implicit)
{
    int n = 0, cap = 16;
    test_case *c = calloc((size_t)cap, sizeof *c);
    if (!c) abort();
    add_samples(&c, &n, &cap, "samples", "");
    static const struct { const char *name, *text, *sets; } own[] = {
        {"rk4-2d-robin-t-x", prob_rk4, "a=3"},
        {"euler-3d-halo2", prob_euler3d, "D=0.002"},
        {"rk3-coefficient-field", prob_rk3_coefficient, NULL},
        {"rk2-2d-fourth-order-lap-bc", prob_fourth_order, "D=0.0004"},
        {"rk2-3d-face-gradient", prob_face_gradient_3d, "eps=0.25"},
        {"rk2-2d-energy-delta", prob_energy, "kappa=0.35"},
        {"rk3-2d-array-templates", prob_array_templates, "alpha=2.5"},
        {"rk3-2d-algebraic", prob_algebraic, "kappa=0.6"},
    };
    c = realloc(c, sizeof *c * (size_t)(cap = n + (int)(sizeof own / sizeof *own)));
    if (!c) abort();
    for (size_t i = 0; i < sizeof own / sizeof *own; i++, n++) {
        memset(&c[n], 0, sizeof c[n]);
        snprintf(c[n].name, sizeof c[n].name, "%s", own[i].name);
        c[n].text = strdup(own[i].text);
        c[n].sets = own[i].sets;
    }
    if (implicit) add_samples(&c, &n, &cap, "samples/implicit", "implicit/");
    *cases = c;
    return n;
}

int test_cases(test_case **cases) { return cases_table(cases, 0); }
int test_cases_all(test_case **cases) { return cases_table(cases, 1); }

void test_cases_free(test_case *cases, int n)
{
    for (int i = 0; i < n; i++) free(cases[i].text);
    free(cases);
}

double field_diff(const double *a, const double *b, int64_t n, int64_t *at)
{
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fmax(fabs(a[i]), fabs(b[i])));
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i])) continue;
        double m = fmax(fmax(fabs(a[i]), fabs(b[i])), 1e-6 * scale);
        double d = a[i] == b[i] ? 0 : m > 0 ? fabs(a[i] - b[i]) / m : INFINITY;
        if (!(d <= worst)) {
            worst = d;
            if (at) *at = i;
        }
    }
    return worst;
}

void engine_set_params(engine *e, const char *sets)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", sets ? sets : "");
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = 0;
        assert_int_equal(engine_set_param(e, tok, atof(eq + 1)), 0);
    }
}

static engine *case_engine(const pj_program *p, const char *backend, const engine_options *o, const char *sets)
{
    char err[1024];
    engine *e = engine_create(engine_backend(backend), p, o, NULL, err, sizeof err);
    if (!e) fail_msg("%s back end: %s", backend, err);
    engine_set_params(e, sets);
    if (engine_init(e, err, sizeof err) < 0) fail_msg("%s: %s", backend, err);
    return e;
}

char *case_with_monitors(const test_case *c)
{
    diag d;
    diag_init(&d, c->name, c->text, strlen(c->text));
    pj_program *p = compile_problem(c->name, c->text, strlen(c->text), &d, NULL);
    if (!p) fail_msg("%s", d.log);
    diag_free(&d);
    const char *f = p->field_names[0], *g = p->field_names[p->n_fields - 1];
    const char *off = p->dim == 1 ? "[1]" : p->dim == 2 ? "[1, -1]" : "[0, 1, -1]";
    size_t cap = strlen(c->text) + 1024;
    char *s = malloc(cap);
    snprintf(s, cap, "%s\nmonitor mon_a = integral(%s), mon_b = maxval(%s*%s), mon_c = minval(%s - %s),\n"
                     "        mon_d = mean(%s%s - %s), mon_e = integral(exp(-%s*%s) + %s)\n",
             c->text, f, f, g, g, f, f, off, f, g, g, p->geometry == PJ_GEOM_CARTESIAN ? "x" : "r");
    program_free(p);
    return s;
}

/* Steps ref and e `steps` steps of p's dt (1e-3 when it has none). */
static void step_both(engine *ref, engine *e, int64_t steps)
{
    const pj_program *p = engine_program(ref);
    double dt = p->dt > 0 ? p->dt : 1e-3;
    char err[1024];
    for (int64_t i = 0; i < steps; i++)
        if (engine_step(ref, dt, err, sizeof err) < 0 || engine_step(e, dt, err, sizeof err) < 0) fail_msg("%s", err);
    if (engine_sync(e, err, sizeof err) < 0) fail_msg("%s", err);
}

double engines_monitors_agree(engine *ref, engine *e, int64_t steps, int *bit_equal)
{
    const pj_program *p = engine_program(ref);
    const char *backend = engine_ops(e)->name;
    step_both(ref, e, steps);
    char err[1024];
    double *a = calloc((size_t)p->n_monitors + 1, sizeof *a), *b = calloc((size_t)p->n_monitors + 1, sizeof *b);
    if (engine_reduce(ref, a, err, sizeof err) < 0 || engine_reduce(e, b, err, sizeof err) < 0) fail_msg("%s", err);
    double worst = 0;
    for (int i = 0; i < p->n_monitors; i++) {
        if (bit_equal) *bit_equal += !memcmp(&a[i], &b[i], sizeof a[i]);
        if (isnan(a[i]) && isnan(b[i])) continue;
        double d = a[i] == b[i] ? 0 : isinf(a[i]) || isinf(b[i]) ? INFINITY : tu_reldiff(a[i], b[i]);
        if (d > 0) print_message("  monitor %s: interp %.17g, %s %.17g\n", p->monitor_names[i], a[i], backend, b[i]);
        worst = fmax(worst, d);
    }
    free(a);
    free(b);
    return worst;
}

double engines_agree(engine *ref, engine *e, int64_t steps, const char *label)
{
    const pj_program *p = engine_program(ref);
    const char *backend = engine_ops(e)->name;
    for (int i = 0; i < p->n_params; i++) assert_true(engine_params(ref)[i] == engine_params(e)[i]);
    step_both(ref, e, steps);
    assert_true(engine_time(e) == engine_time(ref));
    assert_int_equal(engine_steps(e), engine_steps(ref));
    char err[1024];
    int64_t n = engine_cells(ref);
    double *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    double worst = 0;
    for (int f = 0; f < p->n_fields; f++) {
        if (engine_get_field(ref, f, a, err, sizeof err) < 0 || engine_get_field(e, f, b, err, sizeof err) < 0)
            fail_msg("%s", err);
        int64_t at = -1;
        double diff = field_diff(a, b, n, &at);
        if (diff > 0)
            print_message("  %s field %s: largest difference %.3g at cell %lld (interp %.17g, %s %.17g)\n", label,
                          p->field_names[f], diff, (long long)at, a[at], backend, b[at]);
        worst = fmax(worst, diff);
    }
    free(a);
    free(b);
    return worst;
}

void engines_same_bits(engine *a, engine *b, const char *what)
{
    const pj_program *p = engine_program(a);
    char err[1024];
    int64_t n = engine_cells(a);
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    assert_non_null(x);
    assert_non_null(y);
    for (int f = 0; f < p->n_fields; f++) {
        if (engine_get_field(a, f, x, err, sizeof err) < 0 || engine_get_field(b, f, y, err, sizeof err) < 0)
            fail_msg("%s", err);
        for (int64_t c = 0; c < n; c++)
            if (memcmp(&x[c], &y[c], sizeof x[c]))
                fail_msg("%s: field %s cell %lld: %.17g against %.17g", what, p->field_names[f], (long long)c, x[c], y[c]);
    }
    free(x);
    free(y);
}

double program_agree(const pj_program *p, const char *sets, const char *backend, const engine_options *o, int64_t steps,
                     const char *label)
{
    engine *ref = case_engine(p, "interp", o, sets), *e = case_engine(p, backend, o, sets);
    double worst = engines_agree(ref, e, steps, label);
    engine_destroy(ref);
    engine_destroy(e);
    return worst;
}

/* ---- the ghost-fill plan (grid.h) on a back end ------------------------------------------- */

/* A hook that fills a side as the mirror rule would (ghost m = interior cell m mirrored about
 * the face): the run must equal one where that side has dn(u) = 0. Host pointers only. */
static int mirror_hook(void *ctx, int side, const grid_layout *g, void *const *buf, int n_fields, double t, char *err,
                       size_t err_len)
{
    (void)t;
    (void)err;
    (void)err_len;
    int *calls = ctx;
    (*calls)++;
    int a = side / 2, hi = side % 2;
    int b0 = a == 0 ? 1 : 0, b1 = a == 2 ? 1 : 2;
    for (int f = 0; f < n_fields; f++) {
        double *u = buf[f];
        for (int64_t q = g->lo[b1]; q < g->lo[b1] + g->ext[b1]; q++)
            for (int64_t r = g->lo[b0]; r < g->lo[b0] + g->ext[b0]; r++) {
                int64_t line = r * g->stride[b0] + q * g->stride[b1];
                for (int m = 1; m <= g->H; m++) {
                    int64_t gh = hi ? g->n[a] - 1 + m : -m, in = hi ? g->n[a] - m : m - 1;
                    u[line + gh * g->stride[a]] = u[line + in * g->stride[a]];
                }
            }
    }
    return 0;
}

static void run_steps(engine *e, const pj_program *p, int steps, double **out)
{
    char err[512];
    for (int i = 0; i < steps; i++)
        if (engine_step(e, p->dt, err, sizeof err) < 0) fail_msg("%s", err);
    if (engine_sync(e, err, sizeof err) < 0) fail_msg("%s", err);
    int64_t n = engine_cells(e);
    for (int f = 0; f < p->n_fields; f++) {
        out[f] = malloc(sizeof(double) * (size_t)n);
        if (engine_get_field(e, f, out[f], err, sizeof err) < 0) fail_msg("%s", err);
    }
}

static pj_program *compile_or_fail(const char *name, const char *text)
{
    diag d;
    diag_init(&d, name, text, strlen(text));
    pj_program *p = compile_problem(name, text, strlen(text), &d, NULL);
    if (!p) fail_msg("%s", d.log);
    diag_free(&d);
    return p;
}

void check_ghost_plan(const char *backend, const engine_options *base, int hooks)
{
    /* linear in (u, v) with affine conditions: F(U) = A U + b; the homogeneous fill drops b */
    static const char linear[] =
        "mesh grid(nx = 12, ny = 7, Lx = 1.2, Ly = 0.7)\n"
        "field u = sin(3*x) + y*y\nfield v = x*y\n"
        "eq dt(u) = 0.3*lap(u) + 0.2*v\neq dt(v) = 0.1*lap(v) - 0.5*u\n"
        "on left: u = 5 + y\non right: u + 0.5*dn(u) = 3 + t\non bottom, top: dn(u) = 1\n"
        "on left, right: dn(v) = 0\non bottom: v = 0\non top: v = 1\n";
    /* the same with a fourth-order term and second conditions, lap(u) = c2 (c2 dropped too) */
    static const char fourth[] =
        "mesh grid(nx = 12, ny = 7, Lx = 1.2, Ly = 0.7)\n"
        "field u = sin(3*x) + y*y\nfield v = x*y\n"
        "eq dt(u) = -0.001*lap(lap(u)) + 0.2*v\neq dt(v) = 0.1*lap(v) - 0.5*u\n"
        "on left: u = 5 + y, lap(u) = 2 + t\non right: u + 0.5*dn(u) = 3 + t, lap(u) = y\n"
        "on bottom: u = 1, lap(u) = -1\non left, right: dn(v) = 0\non bottom: v = 0\non top: v = 1\n";
    static const char *const tail[] = {"time dt = 0.001, steps = 1, scheme = euler\n",
                                       "time dt = 0.001, steps = 1, scheme = rk4\n"};
    for (int sch = 0; sch < 4; sch++) {
        char text[2048];
        snprintf(text, sizeof text, "%s%s", sch < 2 ? linear : fourth, tail[sch % 2]);
        pj_program *p = compile_or_fail("linear.pde", text);
        engine_options o = *base, oh = *base;
        oh.ghosts.homogeneous = 1;
        char err[512];
        engine *full = engine_create(engine_backend(backend), p, &o, NULL, err, sizeof err);
        engine *zero = engine_create(engine_backend(backend), p, &o, NULL, err, sizeof err);
        engine *hom = engine_create(engine_backend(backend), p, &oh, NULL, err, sizeof err);
        if (!full || !zero || !hom) fail_msg("%s: %s", backend, err);
        assert_int_equal(engine_init(full, err, sizeof err), 0);
        assert_int_equal(engine_init(hom, err, sizeof err), 0);
        assert_int_equal(engine_init(zero, err, sizeof err), 0);
        int64_t n = engine_cells(full);
        double *z = calloc((size_t)n, sizeof *z);
        for (int f = 0; f < p->n_fields; f++) assert_int_equal(engine_set_field(zero, f, z, err, sizeof err), 0);
        free(z);
        double *U[2], *Z[2], *Hm[2];
        run_steps(full, p, 3, U);
        run_steps(zero, p, 3, Z);
        run_steps(hom, p, 3, Hm);
        /* three steps of the affine map from U and from 0: hom(U) = full(U) - full(0) */
        double worst = 0, moved = 0;
        for (int f = 0; f < p->n_fields; f++)
            for (int64_t c = 0; c < n; c++) {
                double want = U[f][c] - Z[f][c];
                worst = fmax(worst, fabs(Hm[f][c] - want) / fmax(1.0, fabs(want)));
                moved = fmax(moved, fabs(Z[f][c]));
            }
        print_message("%s %s%s: homogeneous fill against the affine difference: %.3g (the inhomogeneous part "
                      "reaches %.3g)\n", backend, sch % 2 ? "rk4" : "euler", sch < 2 ? "" : ", lap(u) conditions",
                      worst, moved);
        assert_true(worst < 1e-12);
        assert_true(moved > 1e-3); /* the conditions' constants matter: the test can fail */
        for (int f = 0; f < p->n_fields; f++) {
            free(U[f]);
            free(Z[f]);
            free(Hm[f]);
        }
        engine_destroy(full);
        engine_destroy(zero);
        engine_destroy(hom);
        program_free(p);
    }
    if (!hooks) return;
    /* a hook on the top side that mirrors = the condition dn = 0 there, for every field */
    static const char common[] =
        "mesh grid(nx = 9, ny = 6)\nfield u = x + 3*y*y\nfield w = cos(4*y)\n"
        "eq dt(u) = lap(u) + u*w\neq dt(w) = 0.5*lap(w)\n"
        "on bottom: u = 2\non left, right: dn(u) = 0\non left, right: dn(w) = 0\n"
        "time dt = 0.001, steps = 1, scheme = rk2\n";
    char text[1024], mirror[1024];
    snprintf(text, sizeof text, "%son top: u = -7\non top: w = 4\n", common); /* the hook replaces these */
    snprintf(mirror, sizeof mirror, "%s", common);                               /* dn = 0 on top */
    pj_program *ph = compile_or_fail("hooked.pde", text), *pm = compile_or_fail("mirror.pde", mirror);
    int calls = 0;
    engine_options o = *base, oh = *base;
    oh.ghosts.hook[3] = mirror_hook;
    oh.ghosts.hook_ctx[3] = &calls;
    char err[512];
    engine *eh = engine_create(engine_backend(backend), ph, &oh, NULL, err, sizeof err);
    engine *em = engine_create(engine_backend(backend), pm, &o, NULL, err, sizeof err);
    if (!eh || !em) fail_msg("%s: %s", backend, err);
    assert_int_equal(engine_init(eh, err, sizeof err), 0);
    assert_int_equal(engine_init(em, err, sizeof err), 0);
    double *A[2], *B[2];
    run_steps(eh, ph, 5, A);
    run_steps(em, pm, 5, B);
    assert_int_equal(calls, 5 * 2); /* once per stage */
    for (int f = 0; f < 2; f++) {
        int64_t at = -1;
        double d = field_diff(B[f], A[f], engine_cells(eh), &at);
        print_message("%s hook: field %d largest difference %.3g\n", backend, f, d);
        assert_true(d == 0);
        free(A[f]);
        free(B[f]);
    }
    engine_destroy(eh);
    engine_destroy(em);
    program_free(ph);
    program_free(pm);
}
