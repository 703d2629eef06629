/* solve.h — test helper: compile a problem text, run it to its end on a back end, return the
 * final state of every field. */
#ifndef PJ_TEST_SOLVE_H
#define PJ_TEST_SOLVE_H
#include "program.h"
#include "sim.h"

typedef struct solved {
    pj_program *p;
    double **u;         /* per field: its final interior values (x fastest) */
    double *x[3];       /* cell centres of each cell along each axis */
    int64_t cells;
    double t;
    int status;         /* driver_run's */
    char err[1024];
} solved;

/* BE_CPU_PREFETCH: the CPU back end with kir_launch.prefetch forced on (sim_set_prefetch), as
 * for a state larger than the last-level cache; BE_CUDA: the GPU back end (a real device, or
 * the stand-ins PDEJIT_NVRTC / PDEJIT_LIBCUDA point at) */
typedef enum { BE_INTERP, BE_CPU, BE_CPU_PREFETCH, BE_CUDA } backend_kind;

/* Runs `src` to its end; `sets` is "name=value,name=value" or NULL. */
solved *solve(const char *src, backend_kind be, int single, int threads, const char *sets);
void solved_free(solved *s);
double field_sum(const solved *s, int f);

#endif
