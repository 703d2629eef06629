/* noise_model.c — what a normal number may cost next to a cheap update (issue 30 item 4): the
 * Allen-Cahn step of bench/noise_ac*.pde written as a C loop (5-point Laplacian, u - u^3, euler,
 * N x N, rows of N cells, the outer ring left alone) with the noise term drawn by each variant:
 *
 *   none        no noise (the reference of every ratio)
 *   rand        stream 2's rand(): pj_noise_word (compiler/noise.h) >> 11, 53 bits
 *   hash32      a 32-bit two-multiply hash of the cell (lowbias32 with a key), 32 bits
 *   randn       stream 2's randn(): pj_noise_normal of pj_noise_word, in the loop (what the JIT emits)
 *   randn_row   the same numbers drawn first into a row buffer, then the update loop reads them
 *   bm_f32      Box-Muller in single precision (ln: degree 7, sin: degree 4), one normal a word
 *   bm_f32_pair the same with both normals of a word used, cos for even and sin for odd cells,
 *               drawn into a row buffer (the most a one-word Box-Muller can share)
 *   icdf_f32    Giles' single-precision inverse error function (M. Giles, "Approximating the erfinv
 *               function", GPU Computing Gems, 2011) on 32 bits of the word: one ln, a square root
 *               and two degree-8 polynomials, both evaluated (a vector's lanes take both branches)
 *   libm        stream 2's word through glibc's log, cos and sqrt (libmvec's vector variants when
 *               built with -fveclib=libmvec)
 *
 * The single-precision variants have the operation counts of float-accurate transforms, not fitted
 * coefficients: they model time, not numbers. Each round times every variant once (STEPS steps
 * each, in the same order), so a busy spell of a shared machine hits them alike; the medians over
 * the rounds are printed in ns per cell with none / variant (the "runs at >= 0.5x").
 *
 *   clang -O3 -march=native -mprefer-vector-width=512 -ffp-contract=off -fno-math-errno \
 *         -fveclib=libmvec -Icompiler bench/noise_model.c -o noise_model -lmvec -lm
 *   ./noise_model [N] [STEPS] [ROUNDS]          (default 128 2000 9)
 */
#define _POSIX_C_SOURCE 199309L
#include "noise.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 1024

static inline float f32_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* ln(u), u > 0 normal, in single precision: exponent split and a degree-7 polynomial */
static inline float ln_f32(float u)
{
    uint32_t b = bits_of(u), m = (b & 0x7fffffu) | 0x3f800000u;
    int32_t e = (int32_t)(b >> 23) - 127;
    if (m > 0x3fb504f3u) { /* mantissa above sqrt(2): halve it */
        m -= 1u << 23;
        e += 1;
    }
    float f = f32_of(m) - 1.0f, p = -0.12f;
    p = fmaf(p, f, 0.142f);
    p = fmaf(p, f, -0.1666f);
    p = fmaf(p, f, 0.2f);
    p = fmaf(p, f, -0.25f);
    p = fmaf(p, f, 0.3333f);
    p = fmaf(p, f, -0.5f);
    p = fmaf(p, f, 1.0f);
    return fmaf((float)e, 0.6931472f, f * p);
}

/* Box-Muller of the word w in single precision: R from the high half, sin (odd) or cos (!odd) of
 * a quarter turn from the low half's 30 bits, the signs from its two top bits */
static inline double bm_f32(uint64_t w, int odd)
{
    uint32_t a = (uint32_t)(w >> 32), b = (uint32_t)w;
    float r = sqrtf(-2.0f * ln_f32((float)(a | 1u) * 0x1p-32f));
    float x = (float)(b & 0x3fffffffu) * 0x1p-30f, y = x * x, q;
    if (odd) {
        q = 1.6e-4f;
        q = fmaf(q, y, -4.68e-3f);
        q = fmaf(q, y, 0.0797f);
        q = fmaf(q, y, -0.646f);
        q = x * fmaf(q, y, 1.5707963f);
    } else {
        q = -2.2e-5f;
        q = fmaf(q, y, 9.1e-4f);
        q = fmaf(q, y, -0.0208f);
        q = fmaf(q, y, 0.2536f);
        q = fmaf(q, y, -1.2337f);
        q = fmaf(q, y, 1.0f);
    }
    uint32_t sign = odd ? b & 0x80000000u : (b << 1) & 0x80000000u;
    return (double)f32_of(bits_of(r * q) ^ sign);
}

/* sqrt(2) erfinv(x) of x = +-(m + 1/2) 2^-31, m the low 31 bits of h, its sign bit 31 */
static inline double icdf_f32(uint32_t h)
{
    uint32_t m = h & 0x7fffffffu;
    float xa = ((float)m + 0.5f) * 0x1p-31f, omx = (float)(0xffffffffu - 2u * m) * 0x1p-32f; /* |x|, 1 - |x| */
    float w = -ln_f32(omx * (2.0f - omx)), wc = w - 2.5f, ws = sqrtf(w) - 3.0f, p, q;
    p = 2.81022636e-08f;
    p = fmaf(p, wc, 3.43273939e-07f);
    p = fmaf(p, wc, -3.5233877e-06f);
    p = fmaf(p, wc, -4.39150654e-06f);
    p = fmaf(p, wc, 0.00021858087f);
    p = fmaf(p, wc, -0.00125372503f);
    p = fmaf(p, wc, -0.00417768164f);
    p = fmaf(p, wc, 0.246640727f);
    p = fmaf(p, wc, 1.50140941f);
    q = -0.000200214257f;
    q = fmaf(q, ws, 0.000100950558f);
    q = fmaf(q, ws, 0.00134934322f);
    q = fmaf(q, ws, -0.00367342844f);
    q = fmaf(q, ws, 0.00573950773f);
    q = fmaf(q, ws, -0.0076224613f);
    q = fmaf(q, ws, 0.00943887047f);
    q = fmaf(q, ws, 1.00167406f);
    q = fmaf(q, ws, 2.83297682f);
    float z = (w < 5.0f ? p : q) * xa * 1.41421356f;
    return (double)f32_of(bits_of(z) ^ (h & 0x80000000u));
}

static inline uint32_t hash32(uint64_t key, int64_t cell)
{
    uint32_t x = (uint32_t)cell + (uint32_t)key;
    x = (x ^ (x >> 16)) * 0x7feb352du;
    x = ((x ^ (x >> 15)) + (uint32_t)(key >> 32)) * 0x846ca68bu;
    return x ^ (x >> 16);
}

static inline double noise_none(uint64_t k, int64_t c) { return (void)k, (void)c, 0.0; }
static inline double noise_rand(uint64_t k, int64_t c) { return pj_noise_uniform(pj_noise_word(k, c), 0); }
static inline double noise_hash32(uint64_t k, int64_t c) { return (double)hash32(k, c) * 0x1p-32; }
static inline double noise_randn(uint64_t k, int64_t c) { return pj_noise_normal(pj_noise_word(k, c)); }
static inline double noise_bm_f32(uint64_t k, int64_t c) { return bm_f32(pj_noise_word(k, c), 1); }
static inline double noise_icdf_f32(uint64_t k, int64_t c) { return icdf_f32((uint32_t)(pj_noise_word(k, c) >> 32)); }
static inline double noise_libm(uint64_t k, int64_t c)
{
    uint64_t w = pj_noise_word(k, c);
    double u0 = ((double)(w >> 32) + 0.5) * 0x1p-32, v = (double)(w & 0xffffffffu) * 0x1p-32;
    return sqrt(-2.0 * log(u0)) * cos(6.283185307179586 * v);
}

static int n = 128;
static double bufa[MAXN * MAXN], bufb[MAXN * MAXN], row[MAXN];

/* one step of the row j, the noise of cell i taken from NOISE(key, cell) */
#define UPDATE(NOISE)                                                                                         \
    for (int i = 1; i < n - 1; i++) {                                                                         \
        double c = r[i], l = r[i - 1] + r[i + 1] + r[i - n] + r[i + n] - 4.0 * c;                             \
        o[i] = c + 0.01 * (1e-4 * (double)n * (double)n * l + c - c * c * c + 0.01 * (NOISE));                \
    }
#define STEP_IN_LOOP(NAME)                                                                                    \
    static void step_##NAME(const double *restrict u, double *restrict un, uint64_t key)                     \
    {                                                                                                         \
        for (int j = 1; j < n - 1; j++) {                                                                     \
            const double *r = u + (size_t)j * n;                                                              \
            double *o = un + (size_t)j * n;                                                                   \
            UPDATE(noise_##NAME(key, (int64_t)i + (int64_t)n * j))                                           \
        }                                                                                                     \
    }
STEP_IN_LOOP(none)
STEP_IN_LOOP(rand)
STEP_IN_LOOP(hash32)
STEP_IN_LOOP(randn)
STEP_IN_LOOP(bm_f32)
STEP_IN_LOOP(icdf_f32)
STEP_IN_LOOP(libm)

static void step_randn_row(const double *restrict u, double *restrict un, uint64_t key)
{
    for (int j = 1; j < n - 1; j++) {
        const double *r = u + (size_t)j * n;
        double *o = un + (size_t)j * n;
        for (int i = 0; i < n; i++) row[i] = noise_randn(key, (int64_t)i + (int64_t)n * j);
        UPDATE(row[i])
    }
}

static void step_bm_f32_pair(const double *restrict u, double *restrict un, uint64_t key)
{
    for (int j = 1; j < n - 1; j++) {
        const double *r = u + (size_t)j * n;
        double *o = un + (size_t)j * n;
        for (int p = 0; p < n / 2; p++) {
            uint64_t w = pj_noise_word(key, (int64_t)p + (int64_t)(n / 2) * j);
            row[2 * p] = bm_f32(w, 0);
            row[2 * p + 1] = bm_f32(w, 1);
        }
        UPDATE(row[i])
    }
}

typedef void (*step_fn)(const double *restrict, double *restrict, uint64_t);
static const struct {
    const char *name;
    step_fn step;
} variants[] = {{"none", step_none},     {"rand", step_rand},       {"hash32", step_hash32},
                {"randn", step_randn},   {"randn_row", step_randn_row}, {"bm_f32", step_bm_f32},
                {"bm_f32_pair", step_bm_f32_pair}, {"icdf_f32", step_icdf_f32}, {"libm", step_libm}};
#define NV (int)(sizeof variants / sizeof variants[0])

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    n = argc > 1 ? atoi(argv[1]) : 128;
    int steps = argc > 2 ? atoi(argv[2]) : 2000, rounds = argc > 3 ? atoi(argv[3]) : 9;
    if (n < 4 || n > MAXN || n % 2 || steps < 1 || rounds < 1 || rounds > 99) {
        fprintf(stderr, "usage: noise_model [N (even, 4..%d)] [STEPS] [ROUNDS (1..99)]\n", MAXN);
        return 2;
    }
    static double t[NV][99];
    for (int i = 0; i < n * n; i++) bufa[i] = bufb[i] = 0.01 * (double)(i % 17 - 8) / 8.0;
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < NV; v++) {
            double t0 = now();
            for (int s = 0; s < steps; s++) {
                uint64_t key = pj_noise_key(1, s, 1, 0);
                variants[v].step(s % 2 ? bufb : bufa, s % 2 ? bufa : bufb, key);
            }
            t[v][r] = (now() - t0) / ((double)steps * (n - 2) * (n - 2)) * 1e9;
        }
    for (int v = 0; v < NV; v++) qsort(t[v], (size_t)rounds, sizeof(double), by_value);
    printf("| variant | ns/cell | none / variant |\n|---|---|---|\n");
    for (int v = 0; v < NV; v++)
        printf("| %s | %.3f | %.3f |\n", variants[v].name, t[v][rounds / 2], t[0][rounds / 2] / t[v][rounds / 2]);
    return 0;
}
