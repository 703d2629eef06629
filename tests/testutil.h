/* testutil.h — small helpers shared by the cmocka tests. */
#ifndef PJ_TESTUTIL_H
#define PJ_TESTUTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Reads a whole file (malloc'd, NUL-terminated); NULL when it cannot. */
char *tu_read_file(const char *path, size_t *len);
/* Runs a shell command, captures stdout+stderr (malloc'd) and returns the exit status; once more
 * when LeakSanitizer itself (not a leak) failed in it (testutil.c). */
int tu_run(const char *cmd, char **output);
/* A fresh empty directory under /tmp (malloc'd path). */
char *tu_tempdir(const char *tag);
/* A cmocka group's temporary folder: tu_dir is created by tu_dir_setup and removed with all it
 * holds by tu_dir_teardown (pass them to cmocka_run_group_tests). */
extern char *tu_dir;
int tu_dir_setup(void **state);
int tu_dir_teardown(void **state);
/* Writes text into the file name in tu_dir (a test failure when it cannot). */
void tu_write_file(const char *name, const char *text);
/* Runs `pdejit ARGS` (ARGS a printf format) in tu_dir with the cache folder tu_dir/cache; as tu_run. */
int tu_pdejit(char **output, const char *fmt, ...);
/* The GPU back end's host emulation (tests/gpu_emu/, described in test_gpu.c): builds the stand-in
 * NVRTC and libcuda.so.1 into a fresh folder under /tmp (malloc'd path; the caller removes it),
 * or returns NULL with the reason in why (no C and C++ compiler, a stand-in that does not build). */
char *tu_gpu_emulation_build(char *why, size_t len);
/* Points the cuda back end at the stand-ins in dir (PDEJIT_NVRTC, PDEJIT_LIBCUDA, PJ_EMU_DIR), or,
 * dir NULL, back at the real libraries. */
void tu_gpu_emulation_use(const char *dir);
/* |a-b| / max(|a|,|b|,tiny); 0 when both NaN or equal. */
double tu_reldiff(double a, double b);
/* text with the first `from` replaced by `to` (malloc'd). Every user of this file is a cmocka
 * program (tests/CMakeLists.txt), so a text without `from` fails the running test (fail_msg
 * naming the missing text), as does running out of memory. */
char *tu_replaced(const char *text, const char *from, const char *to);
/* The exponential integral Ei(x) for x > 0 (its series; the exact solutions of FiPy's cylindrical
 * convection examples). */
double tu_expint_ei(double x);

#endif
