/* restart_fixture.h — what the restart fuzz targets (fuzz_checkpoint, fuzz_init_csv) and the tool
 * that writes their seeds share: one fixed small problem (two fields, a param, 1D, rk2) on the
 * interpreter, and a temporary folder to write each input into as a file, since the readers
 * (runtime/checkpoint.h) take a path. */
#ifndef PJ_FUZZ_RESTART_FIXTURE_H
#define PJ_FUZZ_RESTART_FIXTURE_H
#include <limits.h>
#include <stddef.h>
#include "engine.h"
#include "program.h"

typedef struct restart_fixture {
    char root[PATH_MAX];  /* mkdtemp in $TMPDIR, else /dev/shm, else /tmp; removed by close */
    char input[PATH_MAX + 16]; /* root/input: where each input is written */
    pj_program *p;
    engine *e;            /* p on the interpreter, initialised, one thread */
} restart_fixture;

/* The problem compiled, its engine initialised, the folder made. 0, or -1 with a message. */
int restart_fixture_open(restart_fixture *f, char *err, size_t err_len);
/* Frees the engine and the problem, empties and removes the folder. */
void restart_fixture_close(restart_fixture *f);
/* Writes bytes as f->input. 0 or -1. */
int restart_fixture_write(const restart_fixture *f, const void *bytes, size_t len);
/* For a fuzz target: the one fixture of the process (opened on the first call, closed at exit)
 * with the input's bytes written as its f->input. Aborts, naming `target`, where either fails. */
restart_fixture *restart_fixture_with_input(const char *target, const void *bytes, size_t len);

#endif
