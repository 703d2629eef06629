/* testutil.c — see testutil.h. */
#include "testutil.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifndef PJ_SOURCE_DIR
#define PJ_SOURCE_DIR ".."
#endif

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

static int run_once(const char *cmd, char **output)
{
    char *full = malloc(strlen(cmd) + 16);
    sprintf(full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    if (!p) return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[n] = 0;
    int st = pclose(p);
    *output = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Under AddressSanitizer, LeakSanitizer's own tracer (the thread that stops the child at exit to
 * look for leaks) has crashed now and then ("Tracer caught signal 11 ... LeakSanitizer has
 * encountered a fatal error"), while the child's run was fine: no leak report, a failure of the
 * tool. Such a child runs once more, so its leaks are still checked; anything else stands. */
int tu_run(const char *cmd, char **output)
{
    char *buf = NULL;
    int rc = run_once(cmd, &buf);
    if (buf && strstr(buf, "LeakSanitizer has encountered a fatal error")) {
        fprintf(stderr, "tu_run: LeakSanitizer itself failed in `%s`; running it once more\n", cmd);
        free(buf);
        buf = NULL;
        rc = run_once(cmd, &buf);
    }
    if (output) *output = buf;
    else free(buf);
    return rc;
}

char *tu_tempdir(const char *tag)
{
    char *path = malloc(256);
    snprintf(path, 256, "/tmp/pdejit-test-%s-XXXXXX", tag);
    if (!mkdtemp(path)) { free(path); return NULL; }
    return path;
}

double tu_reldiff(double a, double b)
{
    if (isnan(a) && isnan(b)) return 0;
    if (a == b) return 0;
    double m = fmax(fabs(a), fabs(b));
    if (m < 1e-300) m = 1e-300;
    return fabs(a - b) / m;
}

char *tu_dir;

int tu_dir_setup(void **state)
{
    (void)state;
    tu_dir = tu_tempdir("group");
    return tu_dir ? 0 : -1;
}

int tu_dir_teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tu_dir);
    tu_run(cmd, NULL);
    free(tu_dir);
    tu_dir = NULL;
    return 0;
}

int tu_pdejit(char **output, const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s %s", tu_dir, tu_dir, PJ_BINARY, args);
    return tu_run(cmd, output);
}

char *tu_gpu_emulation_build(char *why, size_t len)
{
    if (tu_run("cc --version >/dev/null 2>&1 && c++ --version >/dev/null 2>&1", NULL) != 0) {
        snprintf(why, len, "no C and C++ compiler for the host emulation");
        return NULL;
    }
    char *dir = tu_tempdir("gpu-emu");
    if (!dir) {
        snprintf(why, len, "no temporary folder");
        return NULL;
    }
    /* python/tests/test_term_device.py builds the same ones */
    static const struct { const char *file, *lib; } parts[] = {
        {"nvrtc.c", "libnvrtc.so.99"},
        {"cuda.c", "libcuda.so.1"},
    };
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX + 64], cmd[2 * PATH_MAX + 1000];
        snprintf(path, sizeof path, "%s/tests/gpu_emu/%s", PJ_SOURCE_DIR, parts[i].file);
        snprintf(cmd, sizeof cmd, "cc -std=gnu11 -O1 -shared -fPIC -w -o '%s/%s' '%s' -ldl", dir, parts[i].lib, path);
        char *out = NULL;
        if (tu_run(cmd, &out) != 0) {
            snprintf(why, len, "the stand-in %s does not build: %.300s", parts[i].lib, out ? out : "");
            free(out);
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
            tu_run(cmd, NULL);
            free(dir);
            return NULL;
        }
        free(out);
    }
    return dir;
}

void tu_gpu_emulation_use(const char *dir)
{
    if (!dir) {
        unsetenv("PDEJIT_NVRTC");
        unsetenv("PDEJIT_LIBCUDA");
        return;
    }
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/libnvrtc.so.99", dir);
    setenv("PDEJIT_NVRTC", p, 1);
    snprintf(p, sizeof p, "%s/libcuda.so.1", dir);
    setenv("PDEJIT_LIBCUDA", p, 1);
    setenv("PJ_EMU_DIR", dir, 1);
}

char *tu_replaced(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at) fail_msg("'%s' is not in the text", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

void tu_write_file(const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) fail_msg("cannot write %s", path);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

double tu_expint_ei(double x)
{
    double sum = 0.57721566490153286 + log(x), term = 1;
    for (int k = 1; k < 300; k++) {
        term *= x / k;
        sum += term / k;
    }
    return sum;
}
