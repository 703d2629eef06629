/* philox.h — the counter-based generator behind rand() and randn(): Philox4x32-10.
 *
 * Philox4x32 with 10 rounds, from J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11 (doi:10.1145/2063384.2063405), as Random123 defines
 * it: a 128-bit counter and a 64-bit key; each round multiplies counter words 0 and 2 by M0 and
 * M1 (64-bit products split into hi and lo) and gives {hi1^c1^k0, lo1, hi0^c3^k1, lo0}; the key
 * is bumped by the Weyl constants W0, W1 between rounds. Checked against Random123's
 * tests/kat_vectors in tests/test_noise.c.
 *
 * What pdejit feeds it (the same on every back end, whatever the threads):
 *   key     = the seed (--seed, pj_sim_options.seed): k0 its low 32 bits, k1 its high 32 bits
 *   counter = c0, c1: the global cell index i + nx*(j + ny*k), low and high 32 bits
 *             c2:     the step (steps taken before this one: 0 for the first), low 32 bits
 *             c3:     bits 24-31 the step's bits 32-39, bits 16-23 the stage code (0: the initial
 *                     values, s + 1: stage s of a step), bits 0-15 the call site (each rand() or
 *                     randn() written in the problem, numbered in the order of the text)
 * A uniform number u in [0, 1) takes two words (part 0: words 0 and 1, part 1: words 2 and 3):
 *   double: u = (((w_a << 32) | w_b) >> 11) * 2^-53        (53 random bits, exact)
 *   single: u = (w_a >> 8) * 2^-24                          (24 random bits, exact)
 * randn() is Box-Muller on the two parts of one call, built by the lowering from ordinary IR
 * operations: sqrt(-2 log(1 - u0)) * cos(2 pi u1) (1 - u0 is in (0, 1], so log is finite).
 *
 * The interpreter calls these functions; llvm_backend.c emits the same integer arithmetic as
 * LLVM IR and cuda_codegen.c as CUDA C (PJ_PHILOX_CUDA_SOURCE below); the tests compare them bit
 * for bit. Header-only: static inline, no state. */
#ifndef PJ_PHILOX_H
#define PJ_PHILOX_H
#include <stdint.h>

#define PJ_PHILOX_M0 0xD2511F53u
#define PJ_PHILOX_M1 0xCD9E8D57u
#define PJ_PHILOX_W0 0x9E3779B9u
#define PJ_PHILOX_W1 0xBB67AE85u
#define PJ_PHILOX_ROUNDS 10
#define PJ_RAND_MAX_SITES 65536 /* call sites of one problem: 16 bits of c3 */
#define PJ_RAND_MAX_STAGE 254   /* stage codes 1..255 */

static inline void pj_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < PJ_PHILOX_ROUNDS; r++) {
        if (r) {
            k0 += PJ_PHILOX_W0;
            k1 += PJ_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PJ_PHILOX_M0 * c0, p1 = (uint64_t)PJ_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The counter of one call (see the header comment). */
static inline void pj_rand_counter(int64_t cell, int64_t step, int stage_code, int site, uint32_t ctr[4])
{
    uint64_t c = (uint64_t)cell, s = (uint64_t)step;
    ctr[0] = (uint32_t)c;
    ctr[1] = (uint32_t)(c >> 32);
    ctr[2] = (uint32_t)s;
    ctr[3] = ((uint32_t)(s >> 32) & 0xffu) << 24 | ((uint32_t)stage_code & 0xffu) << 16 | ((uint32_t)site & 0xffffu);
}

/* rand() of one call: uniform in [0, 1), part 0 or 1, in double or (single != 0) float. */
static inline double pj_rand_uniform(uint64_t seed, int64_t cell, int64_t step, int stage_code, int site, int part,
                                     int single)
{
    uint32_t ctr[4], key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
    pj_rand_counter(cell, step, stage_code, site, ctr);
    pj_philox4x32_10(ctr, key, w);
    uint32_t a = w[2 * (part & 1)], b = w[2 * (part & 1) + 1];
    if (single) return (double)((float)(a >> 8) * 0x1p-24f);
    return (double)((((uint64_t)a << 32) | b) >> 11) * 0x1p-53;
}

/* The same, as CUDA C (one device function per precision); cuda_codegen.c prints it into every
 * kernel that calls rand(). */
#define PJ_PHILOX_CUDA_SOURCE                                                                      \
    "// Philox4x32-10 (Salmon et al., SC'11), counter and key as in compiler/philox.h\n"          \
    "static __device__ __forceinline__ void pj_philox(unsigned long long cell, unsigned long long step,\n" \
    "    unsigned stage, unsigned site, unsigned long long seed, unsigned w[4])\n"                   \
    "{\n"                                                                                          \
    "    unsigned c0 = (unsigned)cell, c1 = (unsigned)(cell >> 32), c2 = (unsigned)step;\n"       \
    "    unsigned c3 = (((unsigned)(step >> 32) & 0xffu) << 24) | ((stage & 0xffu) << 16) | (site & 0xffffu);\n" \
    "    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);\n"                             \
    "    for (int r = 0; r < 10; r++) {\n"                                                         \
    "        if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }\n"                                   \
    "        unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;\n"               \
    "        unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;\n"  \
    "        c1 = (unsigned)p1; c3 = (unsigned)p0; c0 = n0; c2 = n2;\n"                            \
    "    }\n"                                                                                      \
    "    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;\n"                                            \
    "}\n"                                                                                          \
    "static __device__ __forceinline__ double pj_rand(unsigned long long cell, unsigned long long step,\n" \
    "    unsigned stage, unsigned site, unsigned part, unsigned long long seed)\n"                 \
    "{\n"                                                                                          \
    "    unsigned w[4];\n"                                                                         \
    "    pj_philox(cell, step, stage, site, seed, w);\n"                                           \
    "    unsigned long long x = ((unsigned long long)w[2 * part] << 32) | w[2 * part + 1];\n"      \
    "    return (double)(x >> 11) * 1.1102230246251565e-16; // 2^-53\n"                            \
    "}\n"                                                                                          \
    "static __device__ __forceinline__ float pj_randf(unsigned long long cell, unsigned long long step,\n" \
    "    unsigned stage, unsigned site, unsigned part, unsigned long long seed)\n"                 \
    "{\n"                                                                                          \
    "    unsigned w[4];\n"                                                                         \
    "    pj_philox(cell, step, stage, site, seed, w);\n"                                           \
    "    return (float)(w[2 * part] >> 8) * 5.9604644775390625e-08f; // 2^-24\n"                  \
    "}\n"

#endif
