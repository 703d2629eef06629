/* copy_bw.c — the memory bandwidth the benchmark's "fraction of the DRAM bound" divides by
 * (bench/run.sh builds it with gcc -O3 -march=native -fopenmp).
 *
 *   b[i] = a[i] over two arrays of MIB MiB each (default 1024: far beyond this VM's 260 MiB L3),
 *   OpenMP static over THREADS threads, first touch by the same threads; REPS timed copies after
 *   one warm-up; plain stores, as a stencil sweep makes (no non-temporal stores: the write-allocate
 *   traffic is in the figure, as it is in a step's).
 *
 * A step that reads a field once and writes it once moves at least 16 bytes per cell, counted as
 * the copy here is (8 read + 8 written), so Mcups x 16 / (this GB/s) is the fraction of one sweep's
 * bound from DRAM.
 *
 * usage: copy_bw THREADS [MIB] [REPS]
 * prints: "copy threads=T mib=M gbs=G1,G2,... median=G" (GB/s = 1e9 bytes/s, 16 bytes per element) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: copy_bw THREADS [MIB] [REPS]\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    long mib = argc > 2 ? atol(argv[2]) : 1024;
    int reps = argc > 3 ? atoi(argv[3]) : 7;
    if (threads < 1 || mib < 1 || reps < 1 || reps > 100) {
        fprintf(stderr, "copy_bw: bad arguments\n");
        return 2;
    }
    omp_set_num_threads(threads);
    long n = mib * 1024 * 1024 / 8;
    double *a = aligned_alloc(64, (size_t)n * 8), *b = aligned_alloc(64, (size_t)n * 8);
    if (!a || !b) {
        fprintf(stderr, "copy_bw: out of memory\n");
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) a[i] = (double)i, b[i] = 0.0;
    double gbs[100];
    for (int r = -1; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) b[i] = a[i];
        double t = omp_get_wtime() - t0;
        if (r >= 0) gbs[r] = 16.0 * (double)n / t / 1e9;
    }
    double check = b[n / 3];
    printf("copy threads=%d mib=%ld gbs=", threads, mib);
    for (int r = 0; r < reps; r++) printf("%s%.2f", r ? "," : "", gbs[r]);
    qsort(gbs, (size_t)reps, sizeof gbs[0], cmp);
    printf(" median=%.2f check=%.0f\n", gbs[reps / 2], check);
    free(a);
    free(b);
    return 0;
}
