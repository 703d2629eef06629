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
/* Runs `pdejit ARGS` (ARGS a printf format) in tu_dir with the cache folder tu_dir/cache; as tu_run. */
int tu_pdejit(char **output, const char *fmt, ...);
/* |a-b| / max(|a|,|b|,tiny); 0 when both NaN or equal. */
double tu_reldiff(double a, double b);

#endif
