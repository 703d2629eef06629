/* ref_rd.c — the hand-written C reference of the benchmark's step (bench/run.sh builds it with
 * gcc -O3 -march=native -fopenmp).
 *
 *   u' = u + dt*(D*lap(u) + k*u*(1 - u))   on an n x n periodic square, explicit Euler
 *
 * What a careful C programmer writes: two (n+2)^2 buffers with one ghost layer, rows padded so
 * that the first interior cell of every row is 64-byte aligned (as pdejit's buffers are); per
 * step a serial periodic halo update (rows, then columns including the corners), then one
 * OpenMP parallel loop over rows (static schedule: one contiguous block of rows per thread),
 * then a pointer swap. 1/h^2 is computed once; the Laplacian is (E + W - 2u)/hx^2 +
 * (N + S - 2u)/hy^2. No -std option, so gcc's default -ffp-contract=fast fuses multiplies and
 * adds into FMAs (pdejit does that only with --fast-math).
 *
 * dt = 0.01, k = 0.01, D = 10/N^2 (D*dt/h^2 = 0.1 at every size: stable; the values pdejit is
 * given).
 *
 * `--div` writes the Laplacian as pdejit's kernel IR spelled it before commit fcd80b6 (differences of face
 * gradients, three divisions per axis: ((E-u)/h - (u-W)/h)/h), to show what the divisions cost.
 *
 * usage: ref_rd N THREADS STEPS_PER_REP REPS [--div|--recip]
 * prints: "ref n=N threads=T variant=V sec_per_step=S1,S2,... median=M checksum=C steps=K ghost_fill=G"
 * (seconds per step for each rep after one warm-up rep; G: one halo update alone).
 *
 * `--3d NX NY NZ THREADS STEPS_PER_REP REPS`: the 3D heat step (bench step 3D, the same problem
 * as `pj_bench step3d` and bench/peers.py)
 *
 *   u' = u + dt*D*lap(u)   on a periodic NX x NY x NZ box, explicit Euler, spacing h = 1/NX on
 *   every axis, dt = 0.01, D = 10*h^2 (D*dt/h^2 = 0.1), u0 = 0.5 + 0.25*sin(2 pi x)*cos(2 pi y)*
 *   cos(2 pi z/Lz) at cell centres x = (i+0.5)h ..., Lz = NZ*h; one ghost layer, x fastest.
 *
 * Two buffers, rows padded as in 2D (the first interior cell of every row 64-byte aligned); per
 * step a serial periodic halo update (x and y ghosts of every interior plane, then the two ghost
 * planes as whole-plane copies), then one OpenMP parallel loop over z-planes (static schedule),
 * then a pointer swap. The Laplacian is (E + W - 2u + N + S - 2u + U + D - 2u)/h^2 with 1/h^2
 * computed once. Steps: exactly STEPS_PER_REP in every rep (no time budget, so that every
 * implementation takes the same steps and the checksums compare): one warm-up rep, then REPS
 * timed reps, (REPS + 1) * STEPS_PER_REP steps in all; the checksum is the sum of all interior
 * cells after them.
 * prints: "ref n=NXxNYxNZ threads=T variant=3d sec_per_step=S1,... median=M checksum=C steps=K
 * ghost_fill=G sumsq=Q" (Q: the sum of squares of the interior cells: diffusion conserves the
 * sum, 0.5 per cell up to rounding after any number of steps, while Q decays step by step).
 *
 * `--3d-case heat-dirichlet|gs-periodic|gs-dirichlet NX NY NZ THREADS STEPS_PER_REP REPS`: the
 * steps of bench/tblock3d.sh's problem files (spacing 1, dt = 1, euler; heat with `on all: u = 0`,
 * Gray-Scott with periodic sides or `on all: u = 1`, `on all: v = 0`), written as above (the
 * Dirichlet ghost 2b - u, the halo update parallel over planes); prints the median's Mcells/s
 * as mcells=M. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K_PARAM 0.01
#define DT 1e-2
#define TWO_PI 6.283185307179586
/* a rep ends after this long even when its steps are not all done (as in pj_bench.c) */
#define REP_BUDGET_S 0.5

typedef struct grid {
    int64_t n, stride; /* interior cells per axis; elements per row */
    double *mem[2];    /* allocations */
    double *u[2];      /* cell (0,0) of each buffer */
} grid;

static void halo_periodic(const grid *g, double *u)
{
    int64_t n = g->n, s = g->stride;
    memcpy(u - s, u + (n - 1) * s, sizeof(double) * (size_t)n); /* bottom ghost row <- top row */
    memcpy(u + n * s, u, sizeof(double) * (size_t)n);           /* top ghost row <- bottom row */
    for (int64_t j = -1; j <= n; j++) {                          /* columns, corners included */
        double *r = u + j * s;
        r[-1] = r[n - 1];
        r[n] = r[0];
    }
}

static void step_mul(const grid *g, const double *restrict u, double *restrict v, double ihx2, double ihy2, double D)
{
    const int64_t n = g->n, s = g->stride;
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; j++) {
        const double *restrict c = u + j * s, *restrict up = c + s, *restrict dn = c - s;
        double *restrict o = v + j * s;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            double uc = c[i];
            double lap = (c[i + 1] + c[i - 1] - 2.0 * uc) * ihx2 + (up[i] + dn[i] - 2.0 * uc) * ihy2;
            o[i] = uc + DT * (D * lap + K_PARAM * uc * (1.0 - uc));
        }
    }
}

static void step_div(const grid *g, const double *restrict u, double *restrict v, double hx, double hy, double D)
{
    const int64_t n = g->n, s = g->stride;
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; j++) {
        const double *restrict c = u + j * s, *restrict up = c + s, *restrict dn = c - s;
        double *restrict o = v + j * s;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            double uc = c[i];
            double lx = ((c[i + 1] - uc) / hx - (uc - c[i - 1]) / hx) / hx;
            double ly = ((up[i] - uc) / hy - (uc - dn[i]) / hy) / hy;
            o[i] = uc + DT * (D * (lx + ly) + K_PARAM * uc * (1.0 - uc));
        }
    }
}

/* That spelling with each division by h replaced by a product with 1/h (computed once). */
static void step_recip(const grid *g, const double *restrict u, double *restrict v, double ihx, double ihy, double D)
{
    const int64_t n = g->n, s = g->stride;
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; j++) {
        const double *restrict c = u + j * s, *restrict up = c + s, *restrict dn = c - s;
        double *restrict o = v + j * s;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            double uc = c[i];
            double lx = ((c[i + 1] - uc) * ihx - (uc - c[i - 1]) * ihx) * ihx;
            double ly = ((up[i] - uc) * ihy - (uc - dn[i]) * ihy) * ihy;
            o[i] = uc + DT * (D * (lx + ly) + K_PARAM * uc * (1.0 - uc));
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- 3D: the heat step on a periodic box ---- */

typedef struct grid3 {
    int64_t nx, ny, nz, sy, sz; /* interior cells per axis; elements per row, per plane */
    double *mem[2];
    double *u[2]; /* cell (0,0,0) */
} grid3;

/* The arguments NX NY NZ THREADS STEPS_PER_REP REPS of the 3D mains (checked by each). */
static void grid3_args(char **argv, grid3 *g, int *threads, int *steps, int *reps)
{
    g->nx = atoll(argv[0]);
    g->ny = atoll(argv[1]);
    g->nz = atoll(argv[2]);
    *threads = atoi(argv[3]);
    *steps = atoi(argv[4]);
    *reps = atoi(argv[5]);
}

/* g's rows (padded to whole cache lines, 7 pad + ghost before cell 0) and planes, from its sizes. */
static void grid3_layout(grid3 *g)
{
    g->sy = (g->nx + 2 + 7) / 8 * 8 + 8;
    g->sz = g->sy * (g->ny + 2);
}

/* One field of g's layout, ghosts included, in *mem (free it): its cell (0,0,0), or NULL. */
static double *grid3_field(const grid3 *g, double **mem)
{
    size_t elems = (size_t)g->sz * (size_t)(g->nz + 2) + 8; /* the top ghost plane's copy ends 7 past */
    *mem = aligned_alloc(64, (elems * sizeof(double) + 63) / 64 * 64);
    return *mem ? *mem + g->sz + g->sy + 8 : NULL; /* after a ghost plane, a ghost row, 7 pad + ghost */
}

static void halo3_periodic(const grid3 *g, double *u)
{
    const int64_t nx = g->nx, ny = g->ny, nz = g->nz, sy = g->sy, sz = g->sz;
    for (int64_t k = 0; k < nz; k++) {
        double *p = u + k * sz;
        memcpy(p - sy, p + (ny - 1) * sy, sizeof(double) * (size_t)nx); /* y ghost rows */
        memcpy(p + ny * sy, p, sizeof(double) * (size_t)nx);
        for (int64_t j = -1; j <= ny; j++) { /* x ghosts, corners included */
            double *r = p + j * sy;
            r[-1] = r[nx - 1];
            r[nx] = r[0];
        }
    }
    /* whole planes (their ghost rows and columns included) */
    memcpy(u - sz - sy - 1, u + (nz - 1) * sz - sy - 1, sizeof(double) * (size_t)sz);
    memcpy(u + nz * sz - sy - 1, u - sy - 1, sizeof(double) * (size_t)sz);
}

static void step3(const grid3 *g, const double *restrict u, double *restrict v, double c)
{
    const int64_t nx = g->nx, ny = g->ny, nz = g->nz, sy = g->sy, sz = g->sz;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nz; k++)
        for (int64_t j = 0; j < ny; j++) {
            const double *restrict q = u + k * sz + j * sy;
            const double *restrict n = q + sy, *restrict s = q - sy, *restrict t = q + sz, *restrict b = q - sz;
            double *restrict o = v + k * sz + j * sy;
#pragma omp simd
            for (int64_t i = 0; i < nx; i++) {
                double uc = q[i];
                double lap = (q[i + 1] + q[i - 1] - 2.0 * uc) + (n[i] + s[i] - 2.0 * uc) + (t[i] + b[i] - 2.0 * uc);
                o[i] = uc + c * lap; /* c = dt*D/h^2 */
            }
        }
}

static int main3d(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: ref_rd --3d NX NY NZ THREADS STEPS_PER_REP REPS\n");
        return 2;
    }
    grid3 g;
    int threads, steps, reps;
    grid3_args(argv, &g, &threads, &steps, &reps);
    if (g.nx < 1 || g.ny < 1 || g.nz < 1 || threads < 1 || steps < 1 || reps < 1) {
        fprintf(stderr, "ref_rd --3d: sizes, threads, steps and reps must be positive\n");
        return 2;
    }
    omp_set_num_threads(threads);
    grid3_layout(&g);
    for (int b = 0; b < 2; b++)
        if (!(g.u[b] = grid3_field(&g, &g.mem[b]))) return 1;
    double h = 1.0 / (double)g.nx, D = 10.0 * h * h, Lz = (double)g.nz * h;
    /* first touch by the threads that will update the planes (ghost planes: the first/last) */
#pragma omp parallel for schedule(static)
    for (int64_t k = -1; k <= g.nz; k++)
        for (int b = 0; b < 2; b++) memset(g.u[b] + k * g.sz - g.sy - 8, 0, sizeof(double) * (size_t)g.sz);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < g.nz; k++)
        for (int64_t j = 0; j < g.ny; j++)
            for (int64_t i = 0; i < g.nx; i++) {
                double x = (i + 0.5) * h, y = (j + 0.5) * h, z = (k + 0.5) * h;
                g.u[0][k * g.sz + j * g.sy + i] =
                    0.5 + 0.25 * sin(TWO_PI * x) * cos(TWO_PI * y) * cos(TWO_PI * z / Lz);
            }
    double c = DT * D / (h * h);
    int cur = 0;
    double *per = malloc(sizeof(double) * (size_t)reps);
    long long total = 0;
    for (int r = -1; r < reps; r++) { /* rep -1: warm-up */
        double t0 = omp_get_wtime();
        for (int k = 0; k < steps; k++) {
            halo3_periodic(&g, g.u[cur]);
            step3(&g, g.u[cur], g.u[1 - cur], c);
            cur = 1 - cur;
        }
        double t = (omp_get_wtime() - t0) / steps;
        if (r >= 0) per[r] = t;
        total += steps;
    }
    int fills = 20;
    double t0 = omp_get_wtime();
    for (int k = 0; k < fills; k++) halo3_periodic(&g, g.u[cur]);
    double fill = (omp_get_wtime() - t0) / fills;
    double sum = 0, sumsq = 0;
    for (int64_t k = 0; k < g.nz; k++)
        for (int64_t j = 0; j < g.ny; j++)
            for (int64_t i = 0; i < g.nx; i++) {
                double v = g.u[cur][k * g.sz + j * g.sy + i];
                sum += v;
                sumsq += v * v;
            }
    printf("ref n=%lldx%lldx%lld threads=%d variant=3d sec_per_step=", (long long)g.nx, (long long)g.ny,
           (long long)g.nz, threads);
    for (int r = 0; r < reps; r++) printf("%s%.6e", r ? "," : "", per[r]);
    qsort(per, (size_t)reps, sizeof *per, cmp_double);
    printf(" median=%.6e checksum=%.15e steps=%lld ghost_fill=%.6e sumsq=%.15e\n", per[reps / 2], sum, total, fill,
           sumsq);
    free(per);
    free(g.mem[0]);
    free(g.mem[1]);
    return 0;
}

/* ---- 3D: bench/tblock3d.sh's problems (spacing 1, dt = 1), heat or Gray-Scott, periodic or
 * Dirichlet sides (the ghost 2b - u: pdejit's linear rule for `u = b`) ---- */

typedef struct case3 {
    int gs, dirichlet;
} case3;

/* The ghost cells of buffer u (a field whose Dirichlet value is b): x, y, then z, as the halo
 * update above (corners unread by the 7-point stencil). */
static void halo3_case(const grid3 *g, double *u, int dirichlet, double b)
{
    if (!dirichlet) {
        halo3_periodic(g, u);
        return;
    }
    const int64_t nx = g->nx, ny = g->ny, nz = g->nz, sy = g->sy, sz = g->sz;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nz; k++) {
        double *p = u + k * sz;
        for (int64_t j = 0; j < ny; j++) {
            double *r = p + j * sy;
            r[-1] = 2 * b - r[0];
            r[nx] = 2 * b - r[nx - 1];
        }
        for (int64_t i = 0; i < nx; i++) {
            p[i - sy] = 2 * b - p[i];
            p[i + ny * sy] = 2 * b - p[i + (ny - 1) * sy];
        }
    }
    for (int64_t j = 0; j < ny; j++)
        for (int64_t i = 0; i < nx; i++) {
            u[i + j * sy - sz] = 2 * b - u[i + j * sy];
            u[i + j * sy + nz * sz] = 2 * b - u[i + j * sy + (nz - 1) * sz];
        }
}

#define LAP7(q, i, sy, sz) ((q[i + 1] + q[i - 1] - 2.0 * q[i]) + (q[i + sy] + q[i - sy] - 2.0 * q[i]) + (q[i + sz] + q[i - sz] - 2.0 * q[i]))

/* One Euler step of bench/tblock3d.sh's heat (dt(u) = 0.1*lap(u)) or Gray-Scott (dt(u) =
 * 0.1*lap(u) - u*v*v + F*(1 - u), dt(v) = 0.05*lap(v) + u*v*v - (F + k)*v), dt = 1, h = 1. */
static void step3_case(const grid3 *g, int gs, const double *restrict u, const double *restrict v, double *restrict uo,
                       double *restrict vo)
{
    const int64_t nx = g->nx, ny = g->ny, nz = g->nz, sy = g->sy, sz = g->sz;
    const double F = 0.04, kk = 0.06;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nz; k++)
        for (int64_t j = 0; j < ny; j++) {
            const int64_t o = k * sz + j * sy;
            const double *restrict q = u + o, *restrict w = gs ? v + o : u + o;
            double *restrict a = uo + o, *restrict c = gs ? vo + o : uo + o;
            if (!gs) {
#pragma omp simd
                for (int64_t i = 0; i < nx; i++) a[i] = q[i] + 0.1 * LAP7(q, i, sy, sz);
                continue;
            }
#pragma omp simd
            for (int64_t i = 0; i < nx; i++) {
                double uvv = q[i] * w[i] * w[i];
                a[i] = q[i] + (0.1 * LAP7(q, i, sy, sz) - uvv + F * (1 - q[i]));
                c[i] = w[i] + (0.05 * LAP7(w, i, sy, sz) + uvv - (F + kk) * w[i]);
            }
        }
}

static int main3d_case(const char *name, int argc, char **argv)
{
    case3 cs = {strstr(name, "gs") != NULL, strstr(name, "dirichlet") != NULL};
    if (argc < 6 || (strcmp(name, "heat-dirichlet") && strcmp(name, "gs-periodic") && strcmp(name, "gs-dirichlet"))) {
        fprintf(stderr, "usage: ref_rd --3d-case heat-dirichlet|gs-periodic|gs-dirichlet NX NY NZ THREADS STEPS_PER_REP REPS\n");
        return 2;
    }
    grid3 g;
    int threads, steps, reps, nb = cs.gs ? 4 : 2;
    grid3_args(argv, &g, &threads, &steps, &reps);
    if (g.nx < 2 || g.ny < 2 || g.nz < 2 || threads < 1 || steps < 1 || reps < 1) return 2;
    omp_set_num_threads(threads);
    grid3_layout(&g);
    double *mem[4], *b[4]; /* u, v (Gray-Scott), then their next states */
    for (int i = 0; i < nb; i++) {
        if (!(b[i] = grid3_field(&g, &mem[i]))) return 1;
#pragma omp parallel for schedule(static)
        for (int64_t k = -1; k <= g.nz; k++) memset(b[i] + k * g.sz - g.sy - 8, 0, sizeof(double) * (size_t)g.sz);
    }
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < g.nz; k++) /* the blob of tblock3d.sh, cell centres (i + 0.5) */
        for (int64_t j = 0; j < g.ny; j++)
            for (int64_t i = 0; i < g.nx; i++) {
                double x = i + 0.5 - g.nx / 2.0, y = j + 0.5 - g.ny / 2.0, z = k + 0.5 - g.nz / 2.0;
                double blob = exp(-(x * x + y * y + z * z) / 400);
                b[0][k * g.sz + j * g.sy + i] = cs.gs ? 1 - 0.5 * blob : 0.5 + 0.25 * blob;
                if (cs.gs) b[1][k * g.sz + j * g.sy + i] = 0.25 * blob;
            }
    double *per = malloc(sizeof(double) * (size_t)reps);
    int nf = cs.gs ? 2 : 1;
    for (int r = -1; r < reps; r++) {
        double t0 = omp_get_wtime();
        for (int k = 0; k < steps; k++) {
            for (int f = 0; f < nf; f++) halo3_case(&g, b[f], cs.dirichlet, cs.gs && f == 0 ? 1 : 0);
            step3_case(&g, cs.gs, b[0], b[1], b[nf], b[nf + 1 < nb ? nf + 1 : nf]);
            for (int f = 0; f < nf; f++) {
                double *t = b[f];
                b[f] = b[nf + f];
                b[nf + f] = t;
            }
        }
        if (r >= 0) per[r] = (omp_get_wtime() - t0) / steps;
    }
    double sum = 0;
    for (int64_t k = 0; k < g.nz; k++)
        for (int64_t j = 0; j < g.ny; j++)
            for (int64_t i = 0; i < g.nx; i++) sum += b[0][k * g.sz + j * g.sy + i];
    printf("ref n=%lldx%lldx%lld threads=%d variant=%s sec_per_step=", (long long)g.nx, (long long)g.ny, (long long)g.nz,
           threads, name);
    for (int r = 0; r < reps; r++) printf("%s%.6e", r ? "," : "", per[r]);
    qsort(per, (size_t)reps, sizeof *per, cmp_double);
    printf(" median=%.6e checksum=%.15e mcells=%.1f\n", per[reps / 2], sum,
           (double)g.nx * (double)g.ny * (double)g.nz / per[reps / 2] / 1e6);
    free(per);
    for (int i = 0; i < nb; i++) free(mem[i]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "--3d-case")) return main3d_case(argv[2], argc - 3, argv + 3);
    if (argc >= 2 && !strcmp(argv[1], "--3d")) return main3d(argc - 2, argv + 2);
    if (argc < 5) {
        fprintf(stderr, "usage: ref_rd N THREADS STEPS_PER_REP REPS [--div|--recip]\n"
                        "       ref_rd --3d NX NY NZ THREADS STEPS_PER_REP REPS\n");
        return 2;
    }
    grid g;
    g.n = atoll(argv[1]);
    int threads = atoi(argv[2]);
    int steps = atoi(argv[3]), reps = atoi(argv[4]);
    const char *variant = argc > 5 ? argv[5] + 2 : "mul";
    if (strcmp(variant, "mul") && strcmp(variant, "div") && strcmp(variant, "recip")) {
        fprintf(stderr, "ref_rd: unknown variant %s\n", argv[5]);
        return 2;
    }
    omp_set_num_threads(threads);
    /* one ghost column on the left: pad so that u(0, j) is 64-byte aligned in every row */
    g.stride = (g.n + 2 + 7) / 8 * 8 + 8;
    size_t elems = (size_t)g.stride * (size_t)(g.n + 2);
    for (int b = 0; b < 2; b++) {
        g.mem[b] = aligned_alloc(64, (elems * sizeof(double) + 63) / 64 * 64);
        if (!g.mem[b]) return 1;
        memset(g.mem[b], 0, elems * sizeof(double));
        g.u[b] = g.mem[b] + g.stride + 8; /* row 0 after one ghost row; column 0 after 8 (7 pad + ghost) */
    }
    double h = 1.0 / (double)g.n, D = 10.0 / ((double)g.n * (double)g.n);
    /* first touch of the interior by the threads that will update it */
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < g.n; j++)
        for (int64_t i = 0; i < g.n; i++) {
            double x = (i + 0.5) * h, y = (j + 0.5) * h;
            g.u[0][j * g.stride + i] = 0.5 + 0.25 * (sin(TWO_PI * x) * cos(TWO_PI * y));
            g.u[1][j * g.stride + i] = 0;
        }
    double ihx2 = 1.0 / (h * h), ihy2 = ihx2;
    int cur = 0;
    double *per = malloc(sizeof(double) * (size_t)reps);
    long long total = 0;
    for (int r = -1; r < reps; r++) { /* rep -1: warm-up */
        double t0 = omp_get_wtime();
        int done = 0;
        for (int k = 0; k < steps; k++) {
            halo_periodic(&g, g.u[cur]);
            if (!strcmp(variant, "div")) step_div(&g, g.u[cur], g.u[1 - cur], h, h, D);
            else if (!strcmp(variant, "recip")) step_recip(&g, g.u[cur], g.u[1 - cur], 1.0 / h, 1.0 / h, D);
            else step_mul(&g, g.u[cur], g.u[1 - cur], ihx2, ihy2, D);
            cur = 1 - cur;
            done++;
            if ((k & 15) == 15 && omp_get_wtime() - t0 > REP_BUDGET_S) break; /* a busy machine */
        }
        double t = (omp_get_wtime() - t0) / done;
        if (r >= 0) per[r] = t;
        total += done;
    }
    /* the halo update alone (serial, inside every step) */
    int fills = steps < 20 ? 20 : steps;
    double t0 = omp_get_wtime();
    for (int k = 0; k < fills; k++) halo_periodic(&g, g.u[cur]);
    double fill = (omp_get_wtime() - t0) / fills;
    double sum = 0;
    for (int64_t j = 0; j < g.n; j++)
        for (int64_t i = 0; i < g.n; i++) sum += g.u[cur][j * g.stride + i];
    printf("ref n=%lld threads=%d variant=%s sec_per_step=", (long long)g.n, threads, variant);
    for (int r = 0; r < reps; r++) printf("%s%.6e", r ? "," : "", per[r]);
    qsort(per, (size_t)reps, sizeof *per, cmp_double);
    printf(" median=%.6e checksum=%.15e steps=%lld ghost_fill=%.6e\n", per[reps / 2], sum, total, fill);
    free(per);
    free(g.mem[0]);
    free(g.mem[1]);
    return 0;
}
