/* diag.h — diagnostics that point at the user's text.
 *
 * Every error on a problem file is rendered as
 *     FILE:LINE:COL: error: MESSAGE
 *         the source line
 *             ^
 * and appended to an in-memory log (library code never prints and never exits); the
 * command line prints the log, tests compare it. Lines and columns are 1-based; a column
 * counts bytes, with a tab advancing to the next multiple of 8 plus one, as editors do. */
#ifndef PJ_DIAG_H
#define PJ_DIAG_H
#include <stddef.h>

typedef struct pj_loc {
    int line, col;         /* 1-based; line 0 means "no position" */
} pj_loc;

typedef struct diag {
    const char *filename;  /* as the user named it */
    const char *source;    /* the whole text, NUL-terminated; not owned */
    size_t source_len;
    int errors, warnings;
    int max_errors;        /* after this many, further errors are counted but not rendered */
    int out_of_memory;     /* one of the errors is "out of memory" (not the input's fault) */
    char *log;             /* malloc'd rendered text, NUL-terminated */
    const char *part_name; /* lines from part_line on are reported as part_name's, from 1 */
    int part_line;
    size_t log_len, log_cap;
    /* errors already reported (a hash of position and message): the same error at the same place
       is reported once, however often a pass meets it (an eq template expanded per member,
       compiler/arrays.c, checks one text several times) */
    unsigned long long seen[64];
    int n_seen;
} diag;

void diag_init(diag *d, const char *filename, const char *source, size_t len);
void diag_free(diag *d);
/* The source is two texts one after the other (a running problem, then a redefinition): an error
 * at line L >= first_line is reported as name:(L - first_line + 1). */
void diag_set_part(diag *d, int first_line, const char *name);
void diag_error(diag *d, pj_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(diag *d, pj_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(diag *d, pj_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Appends plain text (no position) to the log. */
void diag_append(diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Formats a message into a caller's buffer (err may be NULL): the error-out convention of every
 * module that returns -1 "with a message in err". */
void diag_set(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* v with the fewest significant digits (6 to 17) that read back as v, into out: a number as the
 * user wrote it (0.5000000000001, not 0.50000000000010003). Returns out. */
const char *diag_number(char *out, size_t len, double v);
/* The closest of `candidates` to `name` by edit distance, or NULL when none is close. */
const char *diag_closest(const char *name, const char *const *candidates, int n);

#endif
