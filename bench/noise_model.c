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
 *   zigL_perm   (AVX-512 builds) the ziggurat in single precision with L = 64, 128 or 256 layers, one
 *   zigL_gather keyed 32-bit hash a cell, drawn ZIG_BATCH cells (whole rows) at a time into a float
 *               buffer: the fast path in 16-lane vectors, its two tables looked up by in-register
 *               permutes (vpermi2ps, 32 entries each, blended) or by gathers (vgatherdps); the
 *               rejected cells compressed into a list and finished in vectors (wedge: an exp of
 *               float accuracy; tail beyond r: logf, scalar, about one draw in 1000-4000)
 *   zig64_fastonly the ziggurat's fast path alone (no slow path: not a normal distribution, a bound
 *               on what any ziggurat of this shape can cost)
 *   zig64_pair  zig64_perm with stream 2's word of each pair of cells as the hash, its low half to
 *               the even cell, its high half to the odd one (one 64-bit mix for two cells);
 *   zig64_pair_fastonly its fast path alone
 *
 * The ziggurat variants are real generators: `noise_model check [DRAWS] [TAIL_DRAWS]` draws them
 * (default 1e7 for the moments and a Kolmogorov-Smirnov test against the normal CDF, 2e8 for the
 * tails beyond 3 to 6 sigma), with stream 2's randn() as the control, and compares the vector rows
 * (permutes and gathers) with the scalar zig_scalar cell by cell, bit for bit.
 *
 * The single-precision variants have the operation counts of float-accurate transforms, not fitted
 * coefficients: they model time, not numbers. Each round times every variant once (STEPS steps
 * each, in the same order), so a busy spell of a shared machine hits them alike; the medians over
 * the rounds are printed in ns per cell with none / variant (the "runs at >= 0.5x").
 *
 *   clang -O3 -march=native -mprefer-vector-width=512 -ffp-contract=off -fno-math-errno \
 *         -fveclib=libmvec -Icompiler bench/noise_model.c -o noise_model -lmvec -lm
 *   ./noise_model [N] [STEPS] [ROUNDS] [wall|cpu]     (default 128 2000 9 wall)
 *   ./noise_model check [DRAWS] [TAIL_DRAWS]
 *
 * cpu times each variant by the thread's CPU clock instead of the wall clock: on a shared machine
 * the wall clock also counts the time the process waits for a core.
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

/* ---- the ziggurat (Marsaglia and Tsang, "The ziggurat method for generating random variables",
 * J. Stat. Softw. 5(8), 2000) in single precision, L = 64, 128 or 256 layers, one 32-bit hash a
 * cell: layer i = h mod L, sign bit lg = log2 L, u = h >> (lg + 1) limited to UB bits; the fast path
 * x = u w[i] when u < k[i] (under the curve), else the slow path: the wedge test with a second
 * uniform, or for layer 0 the tail beyond r; a rejection restarts with the hash of the cell under
 * the next key (zig_next_key), so every number is a function of (key, cell) alone. The tables come
 * from double libm at start-up (a stream would print them as constants). */
#define ZIG_MAXL 256
typedef struct {
    int L, lg, ub, pair; /* pair: the hash is half of stream 2's word of the cell pair c / 2 */
    double r, v, accept;
    float w[ZIG_MAXL], f[ZIG_MAXL], fp[ZIG_MAXL]; /* fp[i] = f[i - 1] */
    uint32_t k[ZIG_MAXL];
} zig_t;
static zig_t zig64, zig128, zig256, zig64p;

static double zig_pdf(double x) { return exp(-0.5 * x * x); }
/* the top layer's excess area for the base edge r (> 0: r too small); fills x[1..L-1] */
static double zig_close(int L, double r, double *x)
{
    double v = r * zig_pdf(r) + 1.2533141373155003 /* sqrt(pi / 2) */ * erfc(r / sqrt(2.0)), xi = r;
    x[L - 1] = r;
    for (int i = L - 2; i >= 1; i--) {
        double fy = v / xi + zig_pdf(xi);
        if (fy >= 1.0) return 1.0;
        x[i] = xi = sqrt(-2.0 * log(fy));
    }
    return v / xi + zig_pdf(xi) - 1.0;
}
static void zig_init(zig_t *t, int L, int pair)
{
    double x[ZIG_MAXL], lo = 1.0, hi = 6.0;
    for (int it = 0; it < 200; it++) {
        double mid = 0.5 * (lo + hi);
        if (zig_close(L, mid, x) > 0) lo = mid;
        else hi = mid;
    }
    t->L = L;
    t->pair = pair;
    t->r = hi;
    t->v = hi * zig_pdf(hi) + 1.2533141373155003 /* sqrt(pi / 2) */ * erfc(hi / sqrt(2.0));
    zig_close(L, hi, x);
    t->lg = L == 64 ? 6 : L == 128 ? 7 : 8;
    t->ub = 31 - t->lg < 24 ? 31 - t->lg : 24;
    double m = ldexp(1.0, t->ub), q = t->v / zig_pdf(hi), acc = 0;
    t->k[0] = (uint32_t)(hi / q * m);
    t->w[0] = (float)(q / m);
    t->f[0] = 1.0f;
    for (int i = 1; i < L; i++) {
        t->k[i] = i == 1 ? 0u : (uint32_t)(x[i - 1] / x[i] * m);
        t->w[i] = (float)(x[i] / m);
        t->f[i] = (float)zig_pdf(x[i]);
        t->fp[i] = t->f[i - 1];
    }
    for (int i = 0; i < L; i++) acc += (double)t->k[i] / m / L;
    t->accept = acc;
}

/* the next key of a rejection: a new key for the same cell (the attempt a = 1, 2, ...) */
static inline uint64_t zig_next_key(uint64_t key, uint32_t a) { return key + (uint64_t)a * 0xD1B54A32D192ED03ull; }
static inline float zig_u24(uint32_t h) { return ((float)(h >> 8) + 0.5f) * 0x1p-24f; } /* (0, 1) */
static inline uint32_t zig_hash(const zig_t *t, uint64_t key, uint32_t c)
{
    if (!t->pair) return hash32(key, (int64_t)c);
    uint64_t w = pj_noise_word(key, (int64_t)(c >> 1));
    return c & 1u ? (uint32_t)(w >> 32) : (uint32_t)w;
}

/* exp(x), x in [-7, 0], in single precision: x = n ln 2 + y, |y| <= ln 2 / 2, a degree-6 Taylor
 * polynomial (relative error < 2e-7), 2^n into the exponent; the vector version below does the
 * same operations (the checks compare them bit for bit) */
static inline float exp_f32(float x)
{
    float n = nearbyintf(x * 1.44269504f), y = fmaf(n, -0.693145752f, x), p;
    y = fmaf(n, -1.42860677e-06f, y);
    p = fmaf(y, 1.0f / 720, 1.0f / 120);
    p = fmaf(fmaf(fmaf(fmaf(p, y, 1.0f / 24), y, 1.0f / 6), y, 0.5f), y, 1.0f);
    p = fmaf(p, y, 1.0f);
    return f32_of(bits_of(p) + ((uint32_t)(int32_t)n << 23));
}

/* |x| of the tail beyond r: Marsaglia's exponential rejection, repeated until it accepts */
static float zig_tail(const zig_t *t, uint64_t k2, uint32_t c)
{
    for (uint32_t b = 0;; b += 2) {
        float r = (float)t->r, e = -logf(zig_u24(zig_hash(t, k2 + b, c))) / r, y = -logf(zig_u24(zig_hash(t, k2 + b + 1, c)));
        if (2.0f * y > e * e) return r + e;
    }
}

/* the normal of cell c (the scalar reference: the interpreter's way) */
static float zig_scalar(const zig_t *t, uint64_t key, uint32_t c)
{
    uint32_t h = zig_hash(t, key, c);
    for (uint32_t a = 1;; a++) {
        uint32_t i = h & (uint32_t)(t->L - 1), u = (h >> (t->lg + 1)) & ((1u << t->ub) - 1u);
        float x = (float)u * t->w[i], s = (h >> t->lg) & 1u ? -1.0f : 1.0f;
        uint64_t k2 = zig_next_key(key, 2 * a - 1);
        if (u < t->k[i]) return s * x;
        if (i == 0) return s * zig_tail(t, k2, c);
        if (t->f[i] + zig_u24(zig_hash(t, k2, c)) * (t->fp[i] - t->f[i]) < exp_f32(-0.5f * x * x)) return s * x;
        h = zig_hash(t, zig_next_key(key, 2 * a), c);
    }
}

#ifdef __AVX512F__
#include <immintrin.h>
enum { LOOK_PERM, LOOK_GATHER };
/* the L-entry table tab at the indices idx, by in-register permutes (vpermi2ps: 32 entries each)
 * or by a gather */
#define ZIG_INLINE static inline __attribute__((always_inline))
#define ZIG_LG(L) ((L) == 64 ? 6 : (L) == 128 ? 7 : 8)
#define ZIG_UB(L) (31 - ZIG_LG(L) < 24 ? 31 - ZIG_LG(L) : 24)
ZIG_INLINE __m512 zig_look(const float *tab, int L, __m512i idx, int how)
{
    if (how == LOOK_GATHER) return _mm512_i32gather_ps(idx, tab, 4);
    __m512 p[8];
    for (int q = 0; q < L / 32; q++)
        p[q] = _mm512_permutex2var_ps(_mm512_loadu_ps(tab + 32 * q), idx, _mm512_loadu_ps(tab + 32 * q + 16));
    if (L == 32) return p[0];
    __mmask16 b5 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
    p[0] = _mm512_mask_blend_ps(b5, p[0], p[1]);
    if (L == 64) return p[0];
    p[2] = _mm512_mask_blend_ps(b5, p[2], p[3]);
    __mmask16 b6 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64));
    p[0] = _mm512_mask_blend_ps(b6, p[0], p[2]);
    if (L == 128) return p[0];
    p[4] = _mm512_mask_blend_ps(b5, p[4], p[5]);
    p[6] = _mm512_mask_blend_ps(b5, p[6], p[7]);
    p[4] = _mm512_mask_blend_ps(b6, p[4], p[6]);
    return _mm512_mask_blend_ps(_mm512_test_epi32_mask(idx, _mm512_set1_epi32(128)), p[0], p[4]);
}

/* stream 2's words of 8 pair indices p */
static inline __m512i zig_mix8(uint64_t key, __m512i p)
{
    __m512i z = _mm512_xor_si512(_mm512_mullo_epi64(p, _mm512_set1_epi64((int64_t)PJ_NOISE_G)), _mm512_set1_epi64((int64_t)key));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), _mm512_set1_epi64((int64_t)PJ_NOISE_M1));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), _mm512_set1_epi64((int64_t)PJ_NOISE_M2));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}
/* zig_hash of 16 cells c (any) */
static inline __m512i zig_hash16(const zig_t *t, uint64_t key, __m512i c)
{
    if (t->pair) {
        __m512i half = _mm512_srli_epi32(c, 1), odd = _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(1)), 5);
        __m512i w0 = zig_mix8(key, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(half)));
        __m512i w1 = zig_mix8(key, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(half, 1)));
        w0 = _mm512_srlv_epi64(w0, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(odd)));
        w1 = _mm512_srlv_epi64(w1, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(odd, 1)));
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(w0)), _mm512_cvtepi64_epi32(w1), 1);
    }
    __m512i x = _mm512_add_epi32(c, _mm512_set1_epi32((int32_t)(uint32_t)key));
    x = _mm512_mullo_epi32(_mm512_xor_si512(x, _mm512_srli_epi32(x, 16)), _mm512_set1_epi32(0x7feb352d));
    x = _mm512_add_epi32(_mm512_xor_si512(x, _mm512_srli_epi32(x, 15)), _mm512_set1_epi32((int32_t)(key >> 32)));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int32_t)0x846ca68bu));
    return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}
static inline __m512 zig_u24_16(__m512i h)
{
    return _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(h, 8)), _mm512_set1_ps(0.5f)),
                         _mm512_set1_ps(0x1p-24f));
}
static inline __m512 exp_f32_16(__m512 x)
{
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 y = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693145752f), x), p;
    y = _mm512_fmadd_ps(n, _mm512_set1_ps(-1.42860677e-06f), y);
    p = _mm512_fmadd_ps(y, _mm512_set1_ps(1.0f / 720), _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, y, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, y, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, y, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, y, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, y, _mm512_set1_ps(1.0f));
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23)));
}

/* one fast-path try of 16 hashes: x with its sign; *fast the lanes under the curve */
ZIG_INLINE __m512 zig_try16(const zig_t *t, const int L, __m512i h, int how, __m512i *idx, __m512 *xabs, __mmask16 *fast)
{
    *idx = _mm512_and_si512(h, _mm512_set1_epi32(L - 1));
    __m512i u = _mm512_and_si512(_mm512_srli_epi32(h, (unsigned)ZIG_LG(L) + 1), _mm512_set1_epi32((int32_t)((1u << ZIG_UB(L)) - 1u)));
    __m512i k = _mm512_castps_si512(zig_look((const float *)t->k, L, *idx, how));
    *xabs = _mm512_mul_ps(_mm512_cvtepi32_ps(u), zig_look(t->w, L, *idx, how));
    *fast = _mm512_cmplt_epu32_mask(u, k);
    __m512i sg = _mm512_and_si512(_mm512_slli_epi32(h, 31 - ZIG_LG(L)), _mm512_set1_epi32(INT32_MIN));
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(*xabs), sg));
}

/* one try of attempt a (> 1: the hash of the a-th key) for the cells c0 + off (lanes live), the
 * wedge test in vectors, the tail (about one draw in 1000) by zig_tail; the accepted lanes written
 * to out[off] one by one (a scatter is microcoded on Zen 4); returns the lanes still rejected */
/* zig_hash of the 16 cells c0 .. c0 + 15 (c0 even): with pair, 8 words, one for two cells */
static inline __m512i zig_hash16_run(const zig_t *t, uint64_t key, uint32_t c0, __m512i off)
{
    if (t->pair)
        return zig_mix8(key, _mm512_add_epi64(_mm512_set1_epi64((int64_t)(c0 >> 1) + _mm512_cvtsi512_si32(off) / 2),
                                              _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0)));
    return zig_hash16(t, key, _mm512_add_epi32(off, _mm512_set1_epi32((int32_t)c0)));
}

ZIG_INLINE __mmask16 zig_slow16(const zig_t *t, const int L, uint64_t key, uint32_t a, uint32_t c0, __m512i off,
                                __mmask16 live, float *out, int how)
{
    __m512i c = _mm512_add_epi32(off, _mm512_set1_epi32((int32_t)c0)), idx;
    __m512 xa;
    __mmask16 fast;
    __m512 x = zig_try16(t, L, zig_hash16(t, a > 1 ? zig_next_key(key, 2 * a - 2) : key, c), how, &idx, &xa, &fast);
    uint64_t k2 = zig_next_key(key, 2 * a - 1);
    __mmask16 tail = live & ~fast & _mm512_cmpeq_epi32_mask(idx, _mm512_setzero_si512());
    __m512 fi = zig_look(t->f, L, idx, how), fp = zig_look(t->fp, L, idx, how);
    __m512 y = _mm512_fmadd_ps(zig_u24_16(zig_hash16(t, k2, c)), _mm512_sub_ps(fp, fi), fi);
    __mmask16 acc = live & (fast | (_mm512_cmplt_ps_mask(y, exp_f32_16(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), xa), xa))) & ~tail));
    float xs[16];
    uint32_t os[16];
    _mm512_storeu_ps(xs, x);
    _mm512_storeu_si512(os, off);
    for (__mmask16 m = acc | tail; m; m &= (__mmask16)(m - 1)) {
        int l = __builtin_ctz(m);
        out[os[l]] = tail >> l & 1 ? copysignf(zig_tail(t, k2, c0 + os[l]), xs[l]) : xs[l];
    }
    return live & (__mmask16) ~(acc | tail);
}

/* the normals of the cells c0 .. c0 + m - 1 (m a multiple of 16, at most 2 MAXN) into out: the
 * fast path in vectors, the rejected cells' offsets compressed into a list (a list made from each
 * vector's mask afterwards was slower: a branch a rejected cell); then passes over the list (pass a: attempt a of each cell in it), each compressing what it rejects into the next.
 * FAST_ONLY leaves the slow path out (a bound on the time, not a normal distribution). */
ZIG_INLINE void zig_row(const zig_t *t, const int L, uint64_t key, uint32_t c0, int m, float *out, int how, int fast_only)
{
    uint32_t rej[2][2 * MAXN + 32];
    int nr = 0;
    __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    for (int b = 0; b < m; b += 16) {
        __m512i off = _mm512_add_epi32(iota, _mm512_set1_epi32(b)), idx;
        __m512 xa;
        __mmask16 fast;
        _mm512_storeu_ps(out + b, zig_try16(t, L, zig_hash16_run(t, key, c0, off), how, &idx, &xa, &fast));
        /* compress in a register, then a plain store (vpcompressd to memory is microcoded on Zen 4) */
        _mm512_storeu_si512(rej[0] + nr, _mm512_maskz_compress_epi32((__mmask16)~fast, off));
        nr += fast_only ? 0 : __builtin_popcount((__mmask16)~fast);
    }
    for (uint32_t a = 1; nr; a++) {
        const uint32_t *in = rej[(a - 1) & 1];
        uint32_t *next = rej[a & 1];
        int nn = 0;
        for (int q = 0; q < nr; q += 16) {
            __mmask16 live = nr - q >= 16 ? 0xffff : (__mmask16)((1u << (nr - q)) - 1u);
            __m512i off = _mm512_maskz_loadu_epi32(live, in + q);
            __mmask16 r = zig_slow16(t, L, key, a, c0, off, live, out, how);
            _mm512_storeu_si512(next + nn, _mm512_maskz_compress_epi32(r, off));
            nn += __builtin_popcount(r);
        }
        nr = nn;
    }
}
#endif

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

#ifdef __AVX512F__
/* the ziggurat's normals of a row drawn first into a float row buffer (16 cells a vector) */
/* the ziggurat's normals drawn first into a float buffer, ZIG_BATCH cells (whole rows) at a time, so
 * that the slow path of a batch's rejected cells runs in full vectors */
#define ZIG_BATCH 1024
static float rowf[2 * MAXN + 16];
#define STEP_ZIG(NAME, T, L, HOW, FO)                                                                          \
    static void step_##NAME(const double *restrict u, double *restrict un, uint64_t key)                     \
    {                                                                                                         \
        int nb = n < ZIG_BATCH ? ZIG_BATCH / n : 1;                                                           \
        for (int j = 1; j < n - 1; j++) {                                                                     \
            const double *r = u + (size_t)j * n;                                                              \
            double *o = un + (size_t)j * n;                                                                   \
            if ((j - 1) % nb == 0) zig_row(&T, L, key, (uint32_t)(n * j), (nb * n + 15) / 16 * 16, rowf, HOW, FO); \
            const float *z = rowf + (size_t)((j - 1) % nb) * n;                                               \
            UPDATE((double)z[i])                                                                              \
        }                                                                                                     \
    }
STEP_ZIG(zig64_perm, zig64, 64, LOOK_PERM, 0)
STEP_ZIG(zig64_gather, zig64, 64, LOOK_GATHER, 0)
STEP_ZIG(zig128_perm, zig128, 128, LOOK_PERM, 0)
STEP_ZIG(zig128_gather, zig128, 128, LOOK_GATHER, 0)
STEP_ZIG(zig256_perm, zig256, 256, LOOK_PERM, 0)
STEP_ZIG(zig256_gather, zig256, 256, LOOK_GATHER, 0)
STEP_ZIG(zig64_fastonly, zig64, 64, LOOK_PERM, 1)
STEP_ZIG(zig64_pair, zig64p, 64, LOOK_PERM, 0)
STEP_ZIG(zig64_pair_fastonly, zig64p, 64, LOOK_PERM, 1)
#define ZIG_VARIANTS                                                                                          \
    , {"zig64_perm", step_zig64_perm}, {"zig64_gather", step_zig64_gather}, {"zig128_perm", step_zig128_perm},    \
        {"zig128_gather", step_zig128_gather}, {"zig256_perm", step_zig256_perm},                            \
        {"zig256_gather", step_zig256_gather}, {"zig64_fastonly", step_zig64_fastonly},                   \
        {"zig64_pair", step_zig64_pair}, {"zig64_pair_fastonly", step_zig64_pair_fastonly}
#else
#define ZIG_VARIANTS
#endif

typedef void (*step_fn)(const double *restrict, double *restrict, uint64_t);
static const struct {
    const char *name;
    step_fn step;
} variants[] = {{"none", step_none},     {"rand", step_rand},       {"hash32", step_hash32},
                {"randn", step_randn},   {"randn_row", step_randn_row}, {"bm_f32", step_bm_f32},
                {"bm_f32_pair", step_bm_f32_pair}, {"icdf_f32", step_icdf_f32}, {"libm", step_libm} ZIG_VARIANTS};
#define NV (int)(sizeof variants / sizeof variants[0])

static clockid_t clk = CLOCK_MONOTONIC;
static double now(void)
{
    struct timespec t;
    clock_gettime(clk, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- the distribution checks (./noise_model check [DRAWS] [TAIL_DRAWS]) ---- */
typedef struct {
    const char *name;
    const zig_t *t;
} zig_gen;
static const zig_gen zig_gens[] = {{"zig64", &zig64}, {"zig128", &zig128}, {"zig256", &zig256}, {"zig64 pair", &zig64p}};
#define NG (int)(sizeof zig_gens / sizeof zig_gens[0])
#define CHECK_ROW 1024

/* the draws of generator g (g == NG: stream 2's randn()) for row r of CHECK_ROW cells */
static void check_row(int g, int64_t r, float *out, long *mismatch)
{
    uint64_t key = pj_noise_key(7, r / 64, 1, 0);
    uint32_t c0 = (uint32_t)(r % 64) * CHECK_ROW;
    if (g == NG) {
        for (int i = 0; i < CHECK_ROW; i++) out[i] = (float)pj_noise_normal(pj_noise_word(key, (int64_t)(c0 + (uint32_t)i)));
        return;
    }
    const zig_gen *z = &zig_gens[g];
#ifdef __AVX512F__
    static float o2[CHECK_ROW];
    for (int how = LOOK_PERM; how <= LOOK_GATHER; how++) {
        float *d = how == LOOK_PERM ? out : o2;
        if (z->t->L == 64) zig_row(z->t, 64, key, c0, CHECK_ROW, d, how, 0);
        else if (z->t->L == 128) zig_row(z->t, 128, key, c0, CHECK_ROW, d, how, 0);
        else zig_row(z->t, 256, key, c0, CHECK_ROW, d, how, 0);
    }
    for (int i = 0; i < CHECK_ROW; i++) {
        float s = zig_scalar(z->t, key, c0 + (uint32_t)i);
        if (bits_of(s) != bits_of(out[i]) || bits_of(s) != bits_of(o2[i])) ++*mismatch;
    }
#else
    (void)mismatch;
    for (int i = 0; i < CHECK_ROW; i++) out[i] = zig_scalar(z->t, key, c0 + (uint32_t)i);
#endif
}

static int check(long draws, long tail_draws)
{
    long rows = draws / CHECK_ROW, trows = tail_draws / CHECK_ROW;
    double *x = malloc((size_t)rows * CHECK_ROW * sizeof(double));
    static float out[CHECK_ROW];
    if (!x) return 1;
    printf("draws %ld (moments, KS), %ld (tails); vector rows against the scalar cell by cell\n", rows * CHECK_ROW,
           trows * CHECK_ROW);
    for (int t = 0; t < 3; t++) {
        const zig_t *z = t == 0 ? &zig64 : t == 1 ? &zig128 : &zig256;
        printf("zig%d: r = %.12f, v = %.12g, fast-path acceptance %.4f\n", z->L, z->r, z->v, z->accept);
    }
    printf("| generator | mismatches | mean | variance | skewness | excess kurtosis | KS D sqrt(n) | KS p |"
           " > 3 sigma obs/exp | > 4 sigma | > 5 sigma | > 6 sigma | max abs |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int g = 0; g <= NG; g++) {
        long mism = 0, nt[7] = {0};
        double s1 = 0, s2 = 0, s3 = 0, s4 = 0, mx = 0;
        for (long r = 0; r < rows; r++) {
            check_row(g, r, out, &mism);
            for (int i = 0; i < CHECK_ROW; i++) x[r * CHECK_ROW + i] = out[i];
        }
        long nd = rows * CHECK_ROW;
        for (long i = 0; i < nd; i++) s1 += x[i];
        double mean = s1 / (double)nd;
        for (long i = 0; i < nd; i++) {
            double d = x[i] - mean, d2 = d * d;
            s2 += d2, s3 += d2 * d, s4 += d2 * d2;
        }
        double var = s2 / (double)nd, skew = s3 / (double)nd / pow(var, 1.5), kurt = s4 / (double)nd / (var * var) - 3.0;
        qsort(x, (size_t)nd, sizeof(double), by_value);
        double dks = 0;
        for (long i = 0; i < nd; i++) {
            double cdf = 0.5 * erfc(-x[i] / sqrt(2.0)), a = fabs(cdf - (double)i / (double)nd),
                   b = fabs((double)(i + 1) / (double)nd - cdf);
            dks = fmax(dks, fmax(a, b));
        }
        double lam = dks * sqrt((double)nd), p = 0;
        for (int k = 1; k < 100; k++) p += (k % 2 ? 2.0 : -2.0) * exp(-2.0 * k * k * lam * lam);
        for (long r = 0; r < trows; r++) {
            check_row(g, rows + r, out, &mism);
            for (int i = 0; i < CHECK_ROW; i++) {
                double a = fabs((double)out[i]);
                mx = fmax(mx, a);
                for (int k = 3; k <= 6; k++) nt[k] += a > k;
            }
        }
        printf("| %s | %ld | %.2e | %.6f | %.1e | %.1e | %.3f | %.3f |", g == NG ? "stream 2 randn" : zig_gens[g].name,
               mism, mean, var, skew, kurt, lam, p > 1 ? 1.0 : p);
        for (int k = 3; k <= 6; k++)
            printf(" %ld / %.1f |", nt[k], (double)trows * CHECK_ROW * erfc(k / sqrt(2.0)));
        printf(" %.3f |\n", mx);
    }
    free(x);
    return 0;
}

int main(int argc, char **argv)
{
    zig_init(&zig64, 64, 0);
    zig_init(&zig128, 128, 0);
    zig_init(&zig256, 256, 0);
    zig_init(&zig64p, 64, 1);
    if (argc > 1 && !strcmp(argv[1], "check"))
        return check(argc > 2 ? atol(argv[2]) : 10000000L, argc > 3 ? atol(argv[3]) : 200000000L);
    n = argc > 1 ? atoi(argv[1]) : 128;
    int steps = argc > 2 ? atoi(argv[2]) : 2000, rounds = argc > 3 ? atoi(argv[3]) : 9;
    if (argc > 4 && !strcmp(argv[4], "cpu")) clk = CLOCK_THREAD_CPUTIME_ID;
    if (n < 4 || n > MAXN || n % 2 || steps < 1 || rounds < 1 || rounds > 99) {
        fprintf(stderr, "usage: noise_model [N (even, 4..%d)] [STEPS] [ROUNDS (1..99)] [wall|cpu]\n       noise_model check [DRAWS] [TAIL_DRAWS]\n", MAXN);
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
