/* fma_peak.c — the floating-point roof the peer table's "of FP roof" divides by (bench/run.sh
 * builds it with gcc -O3 -march=native -fopenmp).
 *
 *   Each of THREADS OpenMP threads updates ACC independent vectors of the widest doubles the
 *   compiler targets (8 with AVX-512) by acc = acc * a + b, which -march=native makes one fused
 *   multiply-add instruction each; ACC chains hide the FMA's latency, so the loop runs at the
 *   core's FMA throughput. REPS timed runs of ITERS iterations after one warm-up.
 *
 * The figure is in operations a second, one operation = one lane of one floating-point
 * instruction (an FMA counts once, as an add or a multiply does): a stencil kernel's add, sub,
 * mul and fma instructions each take one issue slot of the same units, so (operations a cell,
 * counted from `pdejit emit --ir`) x (cells a second) / (this figure) is the fraction of the roof
 * a kernel reaches. Adds may also issue on separate units on some cores, so a kernel of mostly
 * adds can exceed 1.
 *
 * usage: fma_peak THREADS [REPS]
 * prints: "fma threads=T lanes=L gops=G1,G2,... median=G" (G: 1e9 operations a second, all threads) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__AVX512F__)
#define LANES 8
#elif defined(__AVX__)
#define LANES 4
#else
#define LANES 2
#endif
#define ACC 16 /* independent chains: latency (4-5 cycles) x FMA units (2), with room */

typedef double vec __attribute__((vector_size(LANES * sizeof(double))));

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ITERS iterations of ACC chains; returns their sum's first lane so that nothing is dead. */
static double chains(long iters, double seed) {
    vec acc[ACC], a, b;
    for (int l = 0; l < LANES; l++) a[l] = 0.999999, b[l] = 1e-7;
    for (int k = 0; k < ACC; k++)
        for (int l = 0; l < LANES; l++) acc[k][l] = seed + k + 0.5 * l;
    for (long i = 0; i < iters; i++) {
        /* the seed is opaque to the compiler: the chains cannot be folded away */
        __asm__ volatile("" : "+x"(a));
#pragma GCC unroll 16
        for (int k = 0; k < ACC; k++) acc[k] = acc[k] * a + b;
    }
    vec s = acc[0];
    for (int k = 1; k < ACC; k++) s += acc[k];
    return s[0];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fma_peak THREADS [REPS]\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    if (threads < 1 || reps < 1 || reps > 100) {
        fprintf(stderr, "fma_peak: bad arguments\n");
        return 2;
    }
    omp_set_num_threads(threads);
    const long iters = 20000000; /* ~0.1 s a run at a few GHz with 2 FMA units */
    double gops[100], check = 0;
    for (int r = -1; r < reps; r++) {
        double t0 = omp_get_wtime(), sum = 0;
#pragma omp parallel reduction(+ : sum)
        sum += chains(iters, (double)omp_get_thread_num());
        double t = omp_get_wtime() - t0;
        check += sum;
        if (r >= 0) gops[r] = (double)threads * (double)iters * ACC * LANES / t / 1e9;
    }
    printf("fma threads=%d lanes=%d gops=", threads, LANES);
    for (int r = 0; r < reps; r++) printf("%s%.2f", r ? "," : "", gops[r]);
    qsort(gops, (size_t)reps, sizeof gops[0], cmp);
    printf(" median=%.2f check=%.3g\n", gops[reps / 2], check);
    return 0;
}
