/* test_swap_memory.c — `pdejit run --watch` on the cpu back end over 1000 swaps: the memory a
 * simulation holds stays bounded (issue 25). The test swaps the way the watch does (cli/watch.c:
 * pj_problem_compile_scheme of the new text, pj_sim_swap at a step boundary, the problem swapped
 * in before it freed once replaced) and measures the heap in use (mallinfo2, or the sanitizer's
 * count under AddressSanitizer) and the process's mappings (JIT code is mmapped) after 100 and
 * after 1000 swaps: a leak of the swapped-out kernels or problems (each about 15 kB) would add
 * 900 times its size in between; the bound allowed is a constant, whatever the number of swaps. */
#include "testutil.h"
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* the sanitizer runtime's (its header is not always installed) */
#endif

static double heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return (double)__sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
#endif
}

/* Lines of /proc/self/maps, and their total size in kB. */
static void mappings(long *count, double *kb)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    *count = 0;
    *kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2) *kb += (double)(b - a) / 1024;
        ++*count;
    }
    fclose(f);
}

/* Two definitions in turn: du/dt = 1 and du/dt = 2 (and another monitor expression each). */
static pj_problem *definition(int which)
{
    char text[512];
    snprintf(text, sizeof text, "mesh grid(nx = 32)\nparam k = 1\nfield u = x\neq dt(u) = %d*k + 0*lap(u)\n"
             "monitor every = 1, m = integral(u*%d)\ntime dt = 0.001, steps = 10\n", which ? 2 : 1, which ? 3 : 5);
    pj_problem *pr = NULL;
    char *log = NULL;
    pj_status st = pj_problem_compile_scheme("swap.pde", text, strlen(text), NULL, &pr, &log);
    if (st != PJ_OK) fail_msg("%s", log ? log : "does not compile");
    free(log);
    return pr;
}

static void thousand_swaps_on_cpu(void **state)
{
    (void)state;
    pj_problem *first = definition(0), *current = NULL;
    pj_sim_options o = {.backend = PJ_BACKEND_CPU, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
    pj_sim *s;
    char err[512];
    assert_int_equal(pj_sim_create(first, &o, &s, err, sizeof err), PJ_OK);
    const int total = 1000, early = 100;
    double heap_early = 0, kb_early = 0, expect = 0;
    long maps_early = 0;
    for (int i = 1; i <= total; i++) {
        pj_problem *next = definition(i % 2);
        double t_swap;
        if (pj_sim_swap(s, next, &t_swap, err, sizeof err) != PJ_OK) fail_msg("swap %d: %s", i, err);
        pj_problem_free(current); /* replaced: as the watch frees it */
        current = next;
        assert_int_equal(pj_sim_advance(s, 0.001, pj_sim_time(s) + 0.001, err, sizeof err), PJ_OK);
        expect += 0.001 * (i % 2 ? 2 : 1);
        if (i == early) {
            heap_early = heap_in_use();
            mappings(&maps_early, &kb_early);
        }
    }
    double heap_late = heap_in_use(), kb_late;
    long maps_late;
    mappings(&maps_late, &kb_late);
    print_message("after %d swaps: heap %.0f kB, %ld mappings of %.0f kB; after %d: heap %.0f kB, %ld mappings of "
                  "%.0f kB\n", early, heap_early / 1024, maps_early, kb_early, total, heap_late / 1024, maps_late, kb_late);
    /* the swaps took effect: u grew by 1 or 2 per unit time as each definition said */
    double u[32];
    assert_int_equal(pj_sim_get_field(s, "u", u), PJ_OK);
    for (int c = 0; c < 32; c++) assert_true(fabs(u[c] - ((c + 0.5) / 32 + expect)) < 1e-9);
    /* 900 more swaps: no more than 256 kB of heap (a leak of 15 kB a swap is 13 MB), no more
       than 16 mappings and 4 MB mapped (the JIT's code of each kernel set is a few mappings) */
    assert_true(heap_late - heap_early < 256 * 1024);
    assert_true(maps_late - maps_early <= 16);
    assert_true(kb_late - kb_early < 4096);
    pj_sim_free(s);
    pj_problem_free(current);
    pj_problem_free(first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(thousand_swaps_on_cpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
