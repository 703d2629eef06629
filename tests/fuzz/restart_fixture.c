/* restart_fixture.c — see restart_fixture.h. */
#include "restart_fixture.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diag.h"

static const char problem[] = "mesh grid(nx = 6, Lx = 3)\n"
                              "param D = 0.25\n"
                              "field u = x, v = 1 - x\n"
                              "eq dt(u) = D*lap(u) + v\n"
                              "eq dt(v) = lap(v) - u\n"
                              "on left: u = 0\n"
                              "time dt = 0.01, steps = 4, scheme = rk2\n";

int restart_fixture_open(restart_fixture *f, char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    diag d;
    diag_init(&d, "fixture.pde", problem, sizeof problem - 1);
    f->p = compile_problem("fixture.pde", problem, sizeof problem - 1, &d, NULL);
    diag_free(&d);
    if (!f->p) {
        snprintf(err, err_len, "the fixture's problem does not compile");
        return -1;
    }
    engine_options options = {.threads = 1};
    f->e = engine_create(engine_backend("interp"), f->p, &options, NULL, err, err_len);
    if (!f->e || engine_init(f->e, err, err_len) < 0) {
        restart_fixture_close(f);
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(f->root, sizeof f->root, "%s/pdejit-fuzz-restart.XXXXXX", tmp);
    if (!mkdtemp(f->root)) {
        snprintf(err, err_len, "mkdtemp %s: %s", f->root, strerror(errno));
        f->root[0] = 0;
        restart_fixture_close(f);
        return -1;
    }
    snprintf(f->input, sizeof f->input, "%s/input", f->root);
    return 0;
}

void restart_fixture_close(restart_fixture *f)
{
    engine_destroy(f->e);
    program_free(f->p);
    f->e = NULL;
    f->p = NULL;
    if (f->root[0]) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/input", f->root);
        unlink(path);
        snprintf(path, sizeof path, "%s/checkpoint.pjc", f->root);
        unlink(path);
        rmdir(f->root);
        f->root[0] = 0;
    }
}

int restart_fixture_write(const restart_fixture *f, const void *bytes, size_t len)
{
    FILE *out = fopen(f->input, "wb");
    if (!out) return -1;
    int bad = len && fwrite(bytes, 1, len, out) != len;
    return fclose(out) != 0 || bad ? -1 : 0;
}

static restart_fixture shared_fixture;
static int shared_fixture_open;

static void close_shared_fixture(void) { restart_fixture_close(&shared_fixture); }

restart_fixture *restart_fixture_with_input(const char *target, const void *bytes, size_t len)
{
    if (!shared_fixture_open) {
        char err[1024];
        if (restart_fixture_open(&shared_fixture, err, sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", target, err);
            abort();
        }
        shared_fixture_open = 1;
        atexit(close_shared_fixture);
    }
    if (restart_fixture_write(&shared_fixture, bytes, len) < 0) {
        fprintf(stderr, "%s: cannot write %s\n", target, shared_fixture.input);
        abort();
    }
    return &shared_fixture;
}
