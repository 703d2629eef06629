/* fuzz_init_csv.c — libFuzzer target: the bytes are the CSV of `--init FILE.csv`.
 *
 * They are written as a file and read by checkpoint_init_from_csv (runtime/checkpoint.h) into the
 * engine of a fixed problem (restart_fixture.h: two fields on a 1D grid of 6 cells), as `pdejit
 * run --init` would. Nothing may crash, leak or refuse a file without saying why. Built with
 * -fsanitize=fuzzer for fuzzing, and without it (fuzz_replay.c's main) for the seeds and the
 * regression inputs in ctest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "checkpoint.h"
#include "restart_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    restart_fixture *fixture = restart_fixture_with_input("fuzz_init_csv", data, size);
    err[0] = 0;
    if (checkpoint_init_from_csv(fixture->e, fixture->input, err, sizeof err) < 0 && !err[0]) {
        fprintf(stderr, "fuzz_init_csv: a CSV refused without a message\n");
        abort();
    }
    return 0;
}
