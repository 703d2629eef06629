/* noise.h — the counter-based generator behind rand() and randn() (stream 2, since codegen cpu-10 /
 * cuda-4; stream 1 was Philox4x32-10 with a libm Box-Muller, 40x slower in a vectorised kernel).
 *
 * Every number is a pure function of (seed, step, stage, call site, cell), the same on every back
 * end, whatever the threads. With mix() SplitMix64's finaliser (Steele, Lea, Flood, "Fast
 * splittable pseudorandom number generators", OOPSLA'14: a bijection of 64-bit words) and
 * G = 0x9E3779B97F4A7C15 (odd):
 *   c   = (step mod 2^40) << 24 | stage code << 16 | call site   (stage code: 0 the initial values,
 *         s + 1 stage s of a step; call site: each rand() or randn() of the problem, in text order)
 *   key = mix(mix(seed) + (c + 1) * G)         per launch and call site (hoisted out of the loop)
 *   w   = mix(key ^ (cell * G))                per cell: cell = i + nx*(j + ny*k) of the mesh
 * For a fixed seed, distinct c give distinct keys and, for a fixed key, distinct cells distinct
 * words (both maps are bijections). Then
 *   rand():  double (w >> 11) * 2^-53 (53 bits), single (w >> 40) * 2^-24 (24 bits): exact, in [0, 1)
 *   randn(): Box-Muller on the two halves of w, a = w >> 32 and b = w mod 2^32:
 *            R = sqrt(-2 ln u0), u0 = (a + 1/2) * 2^-32 in (0, 1)   (so |randn()| <= sqrt(66 ln 2)
 *            = 6.764, as in cuRAND's 32-bit Box-Muller: P(|Z| > 6.764) = 1.3e-11 is cut off)
 *            z = +-R * sin(pi/2 * v), v = (b mod 2^31) * 2^-31, the sign bit 31 of b
 *            (sin(pi/2 V) with a random sign has the distribution of cos(2 pi U))
 *   with ln u0 = e ln 2 + f * P(f), u0 = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)], P of degree 11,
 *   and sin(pi/2 v) = v * S(v^2), S of degree 5: Chebyshev interpolants, relative error of
 *   ln(1 + f) <= 1.2e-10 and absolute error of S <= 2.7e-11, so randn() is within 1e-9 relative
 *   of the exact transform of its bits (tests/test_noise.c checks it against libm).
 * Only integer operations and IEEE +, -, *, sqrt and fma (Horner: p = fma(p, x, c)), in this
 * order, in double (single precision rounds the result once): the interpreter calls these
 * functions, llvm_ir.c emits the same operations as LLVM IR (vectorised: no calls, no state) and
 * cuda_codegen.c prints PJ_NOISE_CUDA_SOURCE; the tests compare them bit for bit. */
#ifndef PJ_NOISE_H
#define PJ_NOISE_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#define PJ_NOISE_G 0x9E3779B97F4A7C15ull
#define PJ_NOISE_M1 0xBF58476D1CE4E5B9ull
#define PJ_NOISE_M2 0x94D049BB133111EBull
#define PJ_NOISE_SQRT2_BITS 0x3FF6A09E667F3BCDull /* sqrt(2) rounded */
#define PJ_NOISE_LN2 0.69314718055994531
#define PJ_RAND_MAX_SITES 65536 /* call sites of one problem: 16 bits of c */
#define PJ_RAND_MAX_STAGE 254   /* stage codes 1..255 */
#define PJ_NOISE_PART_NORMAL 2  /* kir_rand's part for randn() (0: rand()) */

/* P (ln), then S (sin), constant term first, printed with 17 digits by every back end */
#define PJ_NOISE_LOG_DEGREE 11
#define PJ_NOISE_SIN_DEGREE 5
static const double pj_noise_log_poly[PJ_NOISE_LOG_DEGREE + 1] = {
    1.000000000048012,    -0.5000000030845538,  0.3333333084628175,   -0.24999936585812552,
    0.20000169637828263,  -0.16670383652378118, 0.1428379839869612,   -0.12410885669266752,
    0.11042735999701206,  -0.1089811251810261,  0.10636542533572452,  -0.05845671621819081};
static const double pj_noise_sin_poly[PJ_NOISE_SIN_DEGREE + 1] = {
    1.5707963267680662, -0.6459640955741278, 0.07969260368558909, -0.0046816577073062575,
    0.00016025459026563696, -3.431789002566147e-06};

static inline uint64_t pj_noise_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * PJ_NOISE_M1;
    z = (z ^ (z >> 27)) * PJ_NOISE_M2;
    return z ^ (z >> 31);
}

/* The key of one call site in one launch (see the header comment). */
static inline uint64_t pj_noise_key(uint64_t seed, int64_t step, int stage_code, int site)
{
    uint64_t c = ((uint64_t)step & 0xFFFFFFFFFFull) << 24 | ((uint64_t)stage_code & 0xffu) << 16 |
                 ((uint64_t)site & 0xffffu);
    return pj_noise_mix(pj_noise_mix(seed) + (c + 1) * PJ_NOISE_G);
}

static inline uint64_t pj_noise_word(uint64_t key, int64_t cell) { return pj_noise_mix(key ^ ((uint64_t)cell * PJ_NOISE_G)); }

static inline double pj_noise_uniform(uint64_t w, int single)
{
    if (single) return (double)((float)(w >> 40) * 0x1p-24f);
    return (double)(w >> 11) * 0x1p-53;
}

/* The normal number of a word, in double. */
static inline double pj_noise_normal(uint64_t w)
{
    uint64_t a = w >> 32, v = w & 0x7fffffffu, neg = (w >> 31) & 1u, bits, mb;
    double d = (double)(2 * a + 1), m, p, x, q;
    memcpy(&bits, &d, 8);
    int64_t e = (int64_t)(bits >> 52) - 1023 - 33; /* u0 = d * 2^-33 = 2^e m, m in [1, 2) */
    mb = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    if (mb > PJ_NOISE_SQRT2_BITS) { /* m in (sqrt 2, 2): m / 2, e + 1 */
        mb -= 1ull << 52;
        e += 1;
    }
    memcpy(&m, &mb, 8);
    double f = m - 1.0;
    p = pj_noise_log_poly[PJ_NOISE_LOG_DEGREE];
    for (int i = PJ_NOISE_LOG_DEGREE - 1; i >= 0; i--) p = fma(p, f, pj_noise_log_poly[i]);
    double ln = fma((double)e, PJ_NOISE_LN2, f * p);
    double r = sqrt(-2.0 * ln);
    x = (double)v * 0x1p-31;
    double y = x * x;
    q = pj_noise_sin_poly[PJ_NOISE_SIN_DEGREE];
    for (int i = PJ_NOISE_SIN_DEGREE - 1; i >= 0; i--) q = fma(q, y, pj_noise_sin_poly[i]);
    double z = r * (x * q);
    return neg ? -z : z;
}

/* rand() (part 0) or randn() (part PJ_NOISE_PART_NORMAL) of one call, in double or (single != 0)
 * rounded to float. */
static inline double pj_noise_value(uint64_t seed, int64_t cell, int64_t step, int stage_code, int site, int part,
                                    int single)
{
    uint64_t w = pj_noise_word(pj_noise_key(seed, step, stage_code, site), cell);
    if (part != PJ_NOISE_PART_NORMAL) return pj_noise_uniform(w, single);
    double z = pj_noise_normal(w);
    return single ? (double)(float)z : z;
}

#endif
