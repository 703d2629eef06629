/* fuzz_checkpoint.c — libFuzzer target: the bytes are a checkpoint file (`--resume`).
 *
 * They are written as a file and read by checkpoint_read (runtime/checkpoint.h) into the engine of
 * a fixed problem (restart_fixture.h: two fields, a param, on the interpreter), as `pdejit run
 * --resume` would. Nothing may crash, leak or take a file that fails the checks checkpoint.h
 * promises: a checkpoint is taken only when it starts with the magic and its last 16 bytes are
 * the XXH3-128 of all before them (the length and checksum are checked before the header is
 * believed); one taken without them ends the run (abort), as a crash does. Built with
 * -fsanitize=fuzzer for fuzzing, and without it (fuzz_replay.c's main) for the seeds and the
 * regression inputs in ctest. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "checkpoint.h"
#include "restart_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    restart_fixture *fixture = restart_fixture_with_input("fuzz_checkpoint", data, size);
    double dt = 0;
    if (checkpoint_read(fixture->e, fixture->input, 0, 0, &dt, err, sizeof err) < 0) {
        if (!err[0]) {
            fprintf(stderr, "fuzz_checkpoint: a checkpoint refused without a message\n");
            abort();
        }
        return 0;
    }
    int sound = size > 18 + 16 && !memcmp(data, "pdejit checkpoint\n", 18);
    if (sound) {
        XXH128_canonical_t sum;
        XXH128_canonicalFromHash(&sum, XXH3_128bits(data, size - 16));
        sound = !memcmp(sum.digest, data + size - 16, 16);
    }
    if (!sound || !isfinite(engine_time(fixture->e)) || engine_steps(fixture->e) < 0) {
        fprintf(stderr, "fuzz_checkpoint: checkpoint_read took a %zu-byte file that fails its checks\n", size);
        abort();
    }
    /* the fields it set are read back whole */
    double *vals = malloc(sizeof *vals * (size_t)engine_cells(fixture->e));
    for (int f = 0; vals && f < fixture->p->n_fields; f++) (void)engine_get_field(fixture->e, f, vals, err, sizeof err);
    free(vals);
    return 0;
}
