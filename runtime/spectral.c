/* spectral.c — the explicit stability limit from an estimate of the Jacobian's spectrum.
 *
 * stability.c assembles the derived Jacobian at the current state (every row, boundary rows with
 * their ghosts folded onto the cells they stand for) into a spectral_matrix; here its entries
 * are sorted and merged (any order of assembly gives the same bits), SPECTRAL_STEPS steps of
 * Arnoldi (modified Gram-Schmidt, orthogonalised twice) run from a start vector drawn from a
 * fixed seed, and the eigenvalues of the Hessenberg matrix (complex shifted QR) are the Ritz
 * values: for a normal Jacobian they lie in the convex hull of the spectrum and converge first
 * to its extreme points, which are the eigenvalues that limit dt. Each Ritz value, enlarged by
 * RITZ_MARGIN (the Ritz values lie a little inside the hull), gives the first s at which s*lambda
 * leaves the scheme's stability region along its ray; the limit is the least of them. A
 * Jacobian of at most SPECTRAL_STEPS rows is reduced exactly (its Ritz values are its
 * eigenvalues). A symmetric Jacobian (diffusion and a reaction of one field) takes Lanczos's
 * three-term recurrence instead, the same Krylov space at steps * n cost instead of steps^2 * n.
 *
 * Growth is the equation's: a mode with Re lambda > 0 only counts when the scheme amplifies it
 * more than exp(dt Re lambda). A real spectrum keeps Gershgorin's limit when that is the larger
 * (Gershgorin's bound on the leftmost real eigenvalue is rigorous and, for diffusion with walls
 * or periodic sides, exact). */
#include "spectral.h"
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RITZ_MARGIN 1.03

double spectral_bytes(int64_t n, double entries)
{
    return entries * (double)sizeof(spectral_entry) + (double)n * 8.0 * (SPECTRAL_STEPS + 4);
}

void spectral_add(spectral_matrix *m, int64_t row, int64_t col, double v)
{
    if (m->failed) return;
    if (row < 0 || col < 0 || row >= m->n || col >= m->n || m->n > INT32_MAX) {
        m->failed = 1;
        return;
    }
    if (m->nnz == m->cap) {
        int64_t cap = m->cap ? 2 * m->cap : 1024;
        if (m->nnz >= m->most) {
            m->failed = 1;
            return;
        }
        spectral_entry *e = realloc(m->e, sizeof *e * (size_t)cap);
        if (!e) {
            m->failed = 1;
            return;
        }
        m->e = e;
        m->cap = cap;
    }
    m->e[m->nnz++] = (spectral_entry){(int32_t)row, (int32_t)col, v};
}

void spectral_free(spectral_matrix *m)
{
    free(m->e);
    m->e = NULL;
    m->nnz = m->cap = 0;
}

int spectral_polynomial(pj_scheme s, double *c)
{
    static const double taylor[] = {1, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 600};
    int degree;
    switch (s) {
    case PJ_EULER: degree = 1; break;
    case PJ_RK2: degree = 2; break;
    case PJ_RK3: case PJ_RK23: degree = 3; break; /* rk23 steps with its 3-stage third-order solution */
    case PJ_RK4: degree = 4; break;
    case PJ_RK45: degree = 6; break;              /* Dormand-Prince: ... + z^5/120 + z^6/600 */
    default: return 0;
    }
    memcpy(c, taylor, sizeof *c * (size_t)(degree + 1));
    return degree;
}

/* |R(r e^{i phi})|^2 > max(1, exp(2 r cos phi)): the scheme amplifies more than the equation. */
static int leaves(const double *c, int degree, double r, double cs, double sn)
{
    double complex z = r * (cs + I * sn), R = c[degree];
    for (int k = degree - 1; k >= 0; k--) R = R * z + c[k];
    double a = creal(R) * creal(R) + cimag(R) * cimag(R), bound = r * cs > 0 ? exp(2 * r * cs) : 1;
    return a > bound * (1 + 1e-12);
}

/* spectral_ray_limit, or INFINITY where it is above `cap`: the scan stops once no limit it can
   still find is below cap (one found at scan point r is at least (r - step) / mod). */
static double ray_limit_below(pj_scheme s, double re, double im, double cap)
{
    double c[8], mod = hypot(re, im);
    int degree = spectral_polynomial(s, c);
    if (!degree || !(mod > 0)) return INFINITY;
    double cs = re / mod, sn = fabs(im) / mod, step = 2e-3;
    for (double r = step; r <= 12; r += step) { /* every region lies within |z| < 12 */
        if ((r - step) / mod > cap) return INFINITY;
        if (!leaves(c, degree, r, cs, sn)) continue;
        double good = r - step, bad = r;
        for (int i = 0; i < 60; i++) {
            double mid = 0.5 * (good + bad);
            if (leaves(c, degree, mid, cs, sn)) bad = mid;
            else good = mid;
        }
        return good / mod;
    }
    return INFINITY;
}

double spectral_ray_limit(pj_scheme s, double re, double im) { return ray_limit_below(s, re, im, INFINITY); }

/* One QR step with shift mu on rows and columns [l, hi] of the complex Hessenberg a (m x m). */
static void qr_step(double complex *a, int m, int l, int hi, double complex mu)
{
    double complex cs[256], sn[256];
    for (int k = l; k <= hi; k++) a[k * m + k] -= mu;
    for (int k = l; k < hi; k++) { /* Givens rotations zero the subdiagonal: R = G a */
        double complex x = a[k * m + k], y = a[(k + 1) * m + k];
        double r = hypot(cabs(x), cabs(y));
        double complex c = r > 0 ? x / r : 1, s = r > 0 ? y / r : 0;
        cs[k] = c;
        sn[k] = s;
        for (int j = k; j <= hi; j++) {
            double complex u = a[k * m + j], w = a[(k + 1) * m + j];
            a[k * m + j] = conj(c) * u + conj(s) * w;
            a[(k + 1) * m + j] = -s * u + c * w;
        }
    }
    for (int k = l; k < hi; k++) { /* R G^H: Hessenberg again */
        double complex c = cs[k], s = sn[k];
        for (int i = l; i <= (k + 1 < hi ? k + 1 : hi); i++) {
            double complex u = a[i * m + k], w = a[i * m + k + 1];
            a[i * m + k] = u * c + w * s;
            a[i * m + k + 1] = -u * conj(s) + w * conj(c);
        }
    }
    for (int k = l; k <= hi; k++) a[k * m + k] += mu;
}

int spectral_hessenberg_eigenvalues(const double *h, int m, double *re, double *im)
{
    if (m < 1 || m > 256) return -1;
    double complex *a = malloc(sizeof *a * (size_t)(m * m));
    if (!a) return -1;
    double norm = 0;
    for (int i = 0; i < m * m; i++) {
        a[i] = h[i];
        norm += h[i] * h[i];
    }
    norm = sqrt(norm);
    int hi = m - 1, iter = 0, rc = 0;
    while (hi >= 0) {
        int l = hi;
        while (l > 0 && cabs(a[l * m + l - 1]) > 1e-15 * (cabs(a[l * m + l]) + cabs(a[(l - 1) * m + l - 1]) + 1e-30 * norm))
            l--;
        if (l > 0) a[l * m + l - 1] = 0;
        if (l == hi) {
            re[hi] = creal(a[hi * m + hi]);
            im[hi] = cimag(a[hi * m + hi]);
            hi--;
            iter = 0;
            continue;
        }
        if (++iter > 200) {
            rc = -1;
            break;
        }
        double complex p = a[(hi - 1) * m + hi - 1], q = a[(hi - 1) * m + hi], r = a[hi * m + hi - 1], d = a[hi * m + hi];
        double complex half = 0.5 * (p + d), root = csqrt(0.25 * (p - d) * (p - d) + q * r);
        double complex mu = cabs(half + root - d) < cabs(half - root - d) ? half + root : half - root;
        if (iter % 20 == 0) mu = d + 0.75 * cabs(r); /* an exceptional shift breaks a cycle */
        qr_step(a, m, l, hi, mu);
    }
    free(a);
    return rc;
}

/* Sorted by row, column and value, entries on one place added in that order: the same bits for
   any order of assembly. */
static int by_place(const void *x, const void *y)
{
    const spectral_entry *a = x, *b = y;
    if (a->r != b->r) return a->r < b->r ? -1 : 1;
    if (a->c != b->c) return a->c < b->c ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v; /* and by value: the sums in one order */
}

/* The vector kernels of the orthogonalisation, which is most of the estimate's time (steps^2 / 2
   dot products and updates of n-vectors): eight partial sums in four two-lane vectors (GCC's and
   Clang's vector extension: SSE2's registers without -march, not bound by one sum's latency), so
   a sum's rounding depends on n alone, the same bits on every x86-64. */
typedef double v2d __attribute__((vector_size(16)));

static v2d ld2(const double *p)
{
    v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void st2(double *p, v2d v) { memcpy(p, &v, sizeof v); }

static double sum8(v2d a0, v2d a1, v2d a2, v2d a3, double tail)
{
    v2d s = (a0 + a1) + (a2 + a3);
    return (s[0] + s[1]) + tail;
}

/* m's entries in by_place's order. They come row after row when the mesh was assembled in one
   band (stability.c): then each row alone is sorted (the same order as one sort of them all). */
static void sort_entries(spectral_matrix *m)
{
    int64_t n = m->nnz, i = 1;
    while (i < n && m->e[i - 1].r <= m->e[i].r) i++;
    if (i < n) { /* not row after row */
        qsort(m->e, (size_t)n, sizeof *m->e, by_place);
        return;
    }
    for (int64_t r0 = 0, r1; r0 < n; r0 = r1) {
        r1 = r0 + 1;
        while (r1 < n && m->e[r1].r == m->e[r0].r) r1++;
        if (r1 - r0 > 32) {
            qsort(m->e + r0, (size_t)(r1 - r0), sizeof *m->e, by_place);
            continue;
        }
        for (int64_t a = r0 + 1; a < r1; a++) { /* insertion: a row has a few entries */
            spectral_entry x = m->e[a];
            int64_t b = a;
            for (; b > r0 && by_place(&m->e[b - 1], &x) > 0; b--) m->e[b] = m->e[b - 1];
            m->e[b] = x;
        }
    }
}

static double dot(const double *x, const double *y, int64_t n)
{
    v2d a0 = {0, 0}, a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        a0 += ld2(x + i) * ld2(y + i);
        a1 += ld2(x + i + 2) * ld2(y + i + 2);
        a2 += ld2(x + i + 4) * ld2(y + i + 4);
        a3 += ld2(x + i + 6) * ld2(y + i + 6);
    }
    double tail = 0;
    for (; i < n; i++) tail += x[i] * y[i];
    return sum8(a0, a1, a2, a3, tail);
}

/* w -= c u, and in the same sweep the dot product of the new w with `next` (NULL: with itself,
   its squared norm): modified Gram-Schmidt's update and its next projection, each element of w
   updated before it is read, as two separate sweeps would. */
static double update_dot(double *restrict w, double c, const double *restrict u, const double *next, int64_t n)
{
    v2d a0 = {0, 0}, a1 = a0, a2 = a0, a3 = a0, cc = {c, c};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v2d x0 = ld2(w + i) - cc * ld2(u + i), x1 = ld2(w + i + 2) - cc * ld2(u + i + 2);
        v2d x2 = ld2(w + i + 4) - cc * ld2(u + i + 4), x3 = ld2(w + i + 6) - cc * ld2(u + i + 6);
        st2(w + i, x0);
        st2(w + i + 2, x1);
        st2(w + i + 4, x2);
        st2(w + i + 6, x3);
        const double *y = next ? next + i : w + i;
        a0 += ld2(y) * x0;
        a1 += ld2(y + 2) * x1;
        a2 += ld2(y + 4) * x2;
        a3 += ld2(y + 6) * x3;
    }
    double tail = 0;
    for (; i < n; i++) {
        w[i] -= c * u[i];
        tail += (next ? next[i] : w[i]) * w[i];
    }
    return sum8(a0, a1, a2, a3, tail);
}

/* One modified Gram-Schmidt pass of w against the k + 1 columns of V (n each), its projections
   added into column k of h (row stride `steps`): the squared norm of w after it. */
static double mgs_pass(const double *V, double *w, int k, int64_t n, double *h, int steps)
{
    double c = dot(V, w, n), norm2 = 0;
    for (int i = 0; i <= k; i++) {
        const double *u = V + (size_t)i * (size_t)n;
        h[i * steps + k] += c;
        double d = update_dot(w, c, u, i < k ? u + n : NULL, n);
        if (i < k) c = d;
        else norm2 = d;
    }
    return norm2;
}

/* The merged matrix as compressed rows: row i's columns and values at [start[i], start[i + 1]). */
typedef struct csr {
    int64_t n;
    const int64_t *start;
    int32_t *col;
    double *val;
    int symmetric; /* every entry equals its mirror (a missing one is 0): Lanczos, not Arnoldi */
} csr;

static void product(const csr *a, const double *v, double *w)
{
    for (int64_t i = 0; i < a->n; i++) {
        double s = 0;
        for (int64_t e = a->start[i]; e < a->start[i + 1]; e++) s += a->val[e] * v[a->col[e]];
        w[i] = s;
    }
}

/* The start vector: splitmix64 from a fixed seed, normalised. */
static void start_vector(double *v, int64_t n)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        v[i] = (double)(z >> 11) * 0x1p-53 * 2 - 1;
    }
    double norm = sqrt(dot(v, v, n));
    for (int64_t i = 0; i < n; i++) v[i] /= norm;
}

/* Arnoldi on the merged matrix: the (steps + 1) x steps Hessenberg h; the steps taken (fewer when
   the Krylov space is invariant), or -1 without memory. */
static int arnoldi(const csr *a, double *h, int steps)
{
    int64_t n = a->n;
    double *V = malloc(sizeof *V * (size_t)n * (size_t)(steps + 1));
    if (!V) return -1;
    start_vector(V, n);
    /* on A - sigma I, sigma the diagonal's mean: the same Krylov space and Ritz values less sigma
       (added back below), but A v's large part along v is gone, so that the first pass cancels
       less and the second (when it cancelled much) is needed less often */
    double sigma = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = a->start[i]; e < a->start[i + 1]; e++) sigma += a->col[e] == i ? a->val[e] : 0;
    sigma /= (double)n;
    double scale = 0;
    int k = 0;
    for (; k < steps; k++) {
        double *w = V + (size_t)(k + 1) * (size_t)n;
        const double *v = V + (size_t)k * (size_t)n;
        product(a, v, w);
        for (int64_t j = 0; j < n; j++) w[j] -= sigma * v[j];
        double wn = sqrt(dot(w, w, n));
        if (wn > scale) scale = wn;
        double next = wn;
        for (int pass = 0; pass < 2; pass++) { /* a second pass when the first cancelled much */
            double before = next;
            next = sqrt(mgs_pass(V, w, k, n, h, steps));
            if (next > 0.7 * before) break;
        }
        h[(k + 1) * steps + k] = next;
        h[k * steps + k] += sigma;
        if (!(next > 1e-12 * scale)) { /* an invariant subspace: its Ritz values are eigenvalues */
            k++;
            break;
        }
        for (int64_t j = 0; j < n; j++) w[j] /= next;
    }
    free(V);
    return k;
}

/* Lanczos on a symmetric matrix: Arnoldi's h (tridiagonal), each step against the last two
   vectors alone (steps * n work instead of steps^2 * n). Without reorthogonalisation the basis
   loses orthogonality once a Ritz value converges, which adds copies of converged Ritz values
   and nothing outside the spectrum's interval (Paige): its ends, which limit dt, are found as by
   Arnoldi (tests/test_stability_spectral.c compares the two). */
static int lanczos(const csr *a, double *h, int steps)
{
    int64_t n = a->n;
    double *buf = malloc(sizeof *buf * (size_t)n * 3);
    if (!buf) return -1;
    double *prev = buf, *v = buf + n, *w = buf + 2 * n, beta = 0, scale = 0;
    start_vector(v, n);
    int k = 0;
    for (; k < steps; k++) {
        product(a, v, w);
        double wn = sqrt(dot(w, w, n));
        if (wn > scale) scale = wn;
        if (k)
            for (int64_t j = 0; j < n; j++) w[j] -= beta * prev[j];
        double alpha = dot(v, w, n), next = sqrt(update_dot(w, alpha, v, NULL, n));
        h[k * steps + k] = alpha;
        h[(k + 1) * steps + k] = next;
        if (k + 1 < steps) h[k * steps + k + 1] = next;
        if (!(next > 1e-12 * scale)) { /* an invariant subspace: its Ritz values are eigenvalues */
            k++;
            break;
        }
        double *t = prev;
        prev = v;
        v = w;
        w = t;
        for (int64_t j = 0; j < n; j++) v[j] /= next;
        beta = next;
    }
    free(buf);
    return k;
}

/* Whether every entry of a (merged, columns in order on each row) equals its mirror. */
static int is_symmetric(const csr *a)
{
    for (int64_t i = 0; i < a->n; i++)
        for (int64_t e = a->start[i]; e < a->start[i + 1]; e++) {
            int64_t c = a->col[e], lo = a->start[c], hi = a->start[c + 1];
            if (c == i) continue;
            while (lo < hi) { /* the mirror (c, i): a binary search of row c */
                int64_t mid = lo + (hi - lo) / 2;
                if (a->col[mid] < i) lo = mid + 1;
                else hi = mid;
            }
            double mirror = lo < a->start[c + 1] && a->col[lo] == i ? a->val[lo] : 0;
            if (!(mirror == a->val[e])) return 0; /* NaN too: Arnoldi's path, which gives up */
        }
    return 1;
}

/* The harmonic Ritz values (about 0) of an Arnoldi run: the eigenvalues of H + h^2 f e_m^T with
   H f = e_m... (H^T f = e_m), h the last subdiagonal. Their reciprocals are Ritz values of the
   inverse Jacobian, so they find the eigenvalues nearest 0 that Ritz values miss; euler needs
   those (its region is tangent to the imaginary axis there). 0, or -1 (H singular). */
static int harmonic_values(const double *hm, double *g, int m, double hnext, double *re, double *im)
{
    double *a = malloc(sizeof *a * (size_t)(m * m + m)), *f = a ? a + m * m : NULL;
    if (!a) return -1;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) a[i * m + j] = hm[j * m + i]; /* H^T */
    for (int i = 0; i < m; i++) f[i] = i == m - 1;
    for (int k = 0; k < m; k++) { /* Gaussian elimination with partial pivoting */
        int piv = k;
        for (int i = k + 1; i < m; i++)
            if (fabs(a[i * m + k]) > fabs(a[piv * m + k])) piv = i;
        if (!(fabs(a[piv * m + k]) > 1e-13 * fabs(hnext))) {
            free(a);
            return -1;
        }
        for (int j = 0; j < m; j++) {
            double t = a[k * m + j];
            a[k * m + j] = a[piv * m + j];
            a[piv * m + j] = t;
        }
        double t = f[k];
        f[k] = f[piv];
        f[piv] = t;
        for (int i = k + 1; i < m; i++) {
            double l = a[i * m + k] / a[k * m + k];
            for (int j = k; j < m; j++) a[i * m + j] -= l * a[k * m + j];
            f[i] -= l * f[k];
        }
    }
    for (int i = m - 1; i >= 0; i--) {
        for (int j = i + 1; j < m; j++) f[i] -= a[i * m + j] * f[j];
        f[i] /= a[i * m + i];
    }
    memcpy(g, hm, sizeof *g * (size_t)(m * m));
    for (int i = 0; i < m; i++) g[i * m + m - 1] += hnext * hnext * f[i];
    free(a);
    return spectral_hessenberg_eigenvalues(g, m, re, im);
}

/* One Arnoldi run of `steps` steps on the merged matrix: the least ray limit over its Ritz values
   (and, for euler, its harmonic Ritz values) into *found, whether the Ritz values are all real
   into *real. 0, or -1 (no memory, no convergence). */
static int estimate(const csr *m, pj_scheme s, int steps, double *found, int *real)
{
    double *h = calloc((size_t)(steps + 1) * (size_t)steps, sizeof *h);
    double *small = malloc(sizeof *small * (size_t)(steps * steps) * 2), *g = small + steps * steps;
    double *re = malloc(sizeof *re * (size_t)steps * 4), *im = re + steps, *hre = im + steps, *him = hre + steps;
    int rc = -1;
    if (!h || !small || !re) goto done;
    int taken = m->symmetric ? lanczos(m, h, steps) : arnoldi(m, h, steps);
    if (taken < 0) goto done;
    for (int i = 0; i < taken; i++)
        for (int j = 0; j < taken; j++) small[i * taken + j] = h[i * steps + j];
    if (taken && spectral_hessenberg_eigenvalues(small, taken, re, im) < 0) goto done;
    double biggest = 0, most_im = 0, least = INFINITY;
    for (int i = 0; i < taken; i++) {
        if (!isfinite(re[i]) || !isfinite(im[i])) goto done; /* a state with NaN: Gershgorin's */
        biggest = fmax(biggest, hypot(re[i], im[i]));
    }
    /* the least over the Ritz values: the largest first, which usually limits, then the others
       only as far as they could still be less (ray_limit_below: the same least) */
    int first = 0;
    for (int i = 1; i < taken; i++)
        if (hypot(re[i], im[i]) > hypot(re[first], im[first])) first = i;
    for (int j = 0; j < taken; j++) {
        int i = j == 0 ? first : j == first ? 0 : j;
        if (!(hypot(re[i], im[i]) > 1e-10 * biggest)) continue; /* a zero eigenvalue limits nothing */
        most_im = fmax(most_im, fabs(im[i]));
        double r = ray_limit_below(s, RITZ_MARGIN * re[i], RITZ_MARGIN * im[i], least);
        if (r < least) least = r;
    }
    double hnext = taken ? h[taken * steps + taken - 1] : 0;
    if (s == PJ_EULER && hnext > 0 && harmonic_values(small, g, taken, hnext, hre, him) == 0)
        for (int i = 0; i < taken; i++) {
            if (!(hypot(hre[i], him[i]) > 1e-8 * biggest) || !(hypot(hre[i], him[i]) < 2 * biggest)) continue;
            double r = ray_limit_below(s, RITZ_MARGIN * hre[i], RITZ_MARGIN * him[i], least);
            if (r < least) least = r;
        }
    if (isnan(least)) goto done;
    *found = least;
    *real = most_im <= 1e-8 * biggest;
    rc = taken == steps; /* 1: the Krylov space was not exhausted (a longer run may tell more) */
done:
    free(h);
    free(small);
    free(re);
    return rc;
}

int spectral_limit(spectral_matrix *m, pj_scheme s, double gershgorin, double *limit)
{
    if (m->failed || m->n < 1) return -1;
    sort_entries(m);
    int64_t k = 0;
    for (int64_t i = 0; i < m->nnz; i++)
        if (k && m->e[k - 1].r == m->e[i].r && m->e[k - 1].c == m->e[i].c) m->e[k - 1].v += m->e[i].v;
        else m->e[k++] = m->e[i];
    m->nnz = k;
    int64_t *start = calloc((size_t)m->n + 1, sizeof *start);
    csr a = {m->n, start, malloc(sizeof(int32_t) * (size_t)(k > 0 ? k : 1)), malloc(sizeof(double) * (size_t)(k > 0 ? k : 1)), 0};
    if (!start || !a.col || !a.val) {
        free(start);
        free(a.col);
        free(a.val);
        return -1;
    }
    for (int64_t i = 0; i < m->nnz; i++) {
        start[m->e[i].r + 1]++;
        a.col[i] = m->e[i].c; /* the product's operands alone, packed */
        a.val[i] = m->e[i].v;
    }
    for (int64_t i = 0; i < m->n; i++) start[i + 1] += start[i];
    a.symmetric = !m->general && is_symmetric(&a);
    double found = INFINITY;
    int real = 1, steps = m->n < SPECTRAL_STEPS ? (int)m->n : SPECTRAL_STEPS;
    int rc = estimate(&a, s, steps, &found, &real);
    /* euler and a complex spectrum: the eigenvalues nearest 0 limit it, and the harmonic Ritz
       values need a longer run to resolve them (when it fits) */
    if (rc == 1 && s == PJ_EULER && !real && spectral_bytes(m->n, (double)m->nnz) - 8.0 * (double)m->n * SPECTRAL_STEPS +
                                                 8.0 * (double)m->n * SPECTRAL_STEPS_EULER <= SPECTRAL_BYTES) {
        steps = m->n < SPECTRAL_STEPS_EULER ? (int)m->n : SPECTRAL_STEPS_EULER;
        rc = estimate(&a, s, steps, &found, &real);
    }
    free(start);
    free(a.col);
    free(a.val);
    if (rc < 0) return -1;
    /* a real spectrum: Gershgorin's bound on its leftmost point holds, and when it is the
       larger limit it is the sharper one */
    if (real && gershgorin > found) found = gershgorin;
    *limit = found;
    return 0;
}
