/* test_docs.c — every example in docs/language.md does what the page says.
 *
 * The page is read as Markdown fenced code blocks: an opening fence is a line "```TAG", the
 * block ends at the next line that is exactly "```". The tags:
 *
 *   ```pde        a complete problem. Written to problem.pde in a fresh temporary folder;
 *                 `pdejit check problem.pde` must exit 0 and print nothing, and
 *                 `pdejit run problem.pde --backend interp --steps 3 --out none --quiet`
 *                 must exit 0.
 *   ```pde-error  a problem that is rejected. Written to problem.pde likewise; the next fenced
 *                 block (only blank lines between) must be a ```text block holding the
 *                 expected output of `pdejit check problem.pde`: at least its first line,
 *                 "problem.pde:LINE:COL: error: MESSAGE". Every line of that block must equal
 *                 the corresponding line of the output (from the first), and the exit status
 *                 must be 2.
 *   ```text       a fragment or a transcript: not run.
 *
 * Any other tag, a bare "```" opening fence or an unclosed block fails the test, so a complete
 * problem cannot hide in an unmarked block. (Tests read nothing outside the repository: that the
 * contract's examples are in this page is checked when the contract changes, not here.) */
#include "testutil.h"
#include "knobs.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC_PATH PJ_SOURCE_DIR "/docs/language.md"

typedef struct block {
    char tag[32];
    char *text;   /* the lines between the fences, each ending in '\n' */
    int line;     /* line number of the opening fence */
} block;

typedef struct doc {
    block *b;
    int n;
    char error[256]; /* a malformed fence, or "" */
} doc;

static void doc_free(doc *d)
{
    for (int i = 0; i < d->n; i++) free(d->b[i].text);
    free(d->b);
    memset(d, 0, sizeof *d);
}

/* Splits a Markdown file into its fenced blocks. */
static int doc_read(const char *path, doc *d)
{
    memset(d, 0, sizeof *d);
    size_t len;
    char *src = tu_read_file(path, &len);
    if (!src) return -1;
    int cap = 0, line = 0;
    block *open = NULL;
    size_t open_len = 0;
    for (char *p = src; *p;) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        line++;
        int fence = n >= 3 && !strncmp(p, "```", 3);
        if (open) {
            if (fence && n == 3) {
                open = NULL;
            } else {
                open->text = realloc(open->text, open_len + n + 2);
                memcpy(open->text + open_len, p, n);
                open_len += n;
                open->text[open_len++] = '\n';
                open->text[open_len] = 0;
            }
        } else if (fence) {
            if (n == 3 || n - 3 >= sizeof open->tag) {
                snprintf(d->error, sizeof d->error, "%s:%d: an opening fence needs a tag (pde, pde-error, text)", path,
                         line);
                break;
            }
            if (d->n == cap) {
                cap = cap ? 2 * cap : 32;
                d->b = realloc(d->b, sizeof *d->b * (size_t)cap);
            }
            open = &d->b[d->n++];
            memset(open, 0, sizeof *open);
            memcpy(open->tag, p + 3, n - 3);
            open->tag[n - 3] = 0;
            open->line = line;
            open->text = calloc(1, 1);
            open_len = 0;
        }
        p = nl ? nl + 1 : p + n;
    }
    if (open && !d->error[0])
        snprintf(d->error, sizeof d->error, "%s:%d: the block opened here is never closed", path, open->line);
    free(src);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* Runs `pdejit ARGS` in dir; returns the exit status and the output (stdout and stderr). */
static int pdejit_in(const char *dir, const char *args, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, PJ_BINARY, args);
    return tu_run(cmd, out);
}

static void remove_dir(char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

static void load_doc(doc *d)
{
    if (doc_read(DOC_PATH, d) < 0) {
        fprintf(stderr, "cannot read %s\n", DOC_PATH);
        fail();
    }
    if (d->error[0]) {
        fprintf(stderr, "%s\n", d->error);
        fail();
    }
}

static void fences_are_tagged(void **state)
{
    (void)state;
    doc d;
    load_doc(&d);
    int bad = 0;
    for (int i = 0; i < d.n; i++)
        if (strcmp(d.b[i].tag, "pde") && strcmp(d.b[i].tag, "pde-error") && strcmp(d.b[i].tag, "text")) {
            fprintf(stderr, "%s:%d: unknown block tag '%s' (use pde, pde-error or text)\n", DOC_PATH, d.b[i].line,
                    d.b[i].tag);
            bad++;
        }
    doc_free(&d);
    assert_int_equal(bad, 0);
}

static void pde_examples_run(void **state)
{
    (void)state;
    doc d;
    load_doc(&d);
    int n = 0, failed = 0;
    for (int i = 0; i < d.n; i++) {
        if (strcmp(d.b[i].tag, "pde")) continue;
        n++;
        char *dir = tu_tempdir("docs");
        assert_non_null(dir);
        char path[512];
        snprintf(path, sizeof path, "%s/problem.pde", dir);
        write_file(path, d.b[i].text);
        char *out = NULL;
        int rc = pdejit_in(dir, "check problem.pde", &out);
        if (rc != 0 || out[0]) {
            fprintf(stderr, "%s:%d: `pdejit check` exits %d (want 0, silent):\n%s\n", DOC_PATH, d.b[i].line, rc, out);
            failed++;
        } else {
            free(out);
            out = NULL;
            rc = pdejit_in(dir, "run problem.pde --backend interp --steps 3 --out none --quiet", &out);
            if (rc != 0) {
                fprintf(stderr, "%s:%d: `pdejit run --backend interp --steps 3` exits %d:\n%s\n", DOC_PATH, d.b[i].line,
                        rc, out);
                failed++;
            }
        }
        free(out);
        remove_dir(dir);
    }
    doc_free(&d);
    /* the page has a dozen complete problems; far fewer means the extraction broke */
    if (n < 8) {
        fprintf(stderr, "only %d ```pde blocks found in %s\n", n, DOC_PATH);
        fail();
    }
    assert_int_equal(failed, 0);
}

/* The i-th line of text (from 0), copied into buf without its '\n'; 0 when there is none. */
static int nth_line(const char *text, int i, char *buf, size_t len)
{
    const char *p = text;
    for (int k = 0; k < i; k++) {
        p = strchr(p, '\n');
        if (!p) return 0;
        p++;
    }
    if (!*p) return 0;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    snprintf(buf, len, "%.*s", (int)n, p);
    return 1;
}

static void error_examples_report(void **state)
{
    (void)state;
    doc d;
    load_doc(&d);
    int n = 0, failed = 0;
    for (int i = 0; i < d.n; i++) {
        if (strcmp(d.b[i].tag, "pde-error")) continue;
        n++;
        if (i + 1 >= d.n || strcmp(d.b[i + 1].tag, "text") || !d.b[i + 1].text[0]) {
            fprintf(stderr, "%s:%d: a pde-error block must be followed by a text block with the message\n", DOC_PATH,
                    d.b[i].line);
            failed++;
            continue;
        }
        const char *want = d.b[i + 1].text;
        char *dir = tu_tempdir("docs");
        assert_non_null(dir);
        char path[512];
        snprintf(path, sizeof path, "%s/problem.pde", dir);
        write_file(path, d.b[i].text);
        char *out = NULL;
        int rc = pdejit_in(dir, "check problem.pde", &out);
        int ok = rc == 2;
        char w[1024], o[1024];
        for (int k = 0; ok && nth_line(want, k, w, sizeof w); k++)
            ok = nth_line(out, k, o, sizeof o) && !strcmp(w, o);
        if (!ok) {
            fprintf(stderr, "%s:%d: `pdejit check` exits %d (want 2); expected output starting\n%swas:\n%s\n", DOC_PATH,
                    d.b[i].line, rc, want, out);
            failed++;
        }
        free(out);
        remove_dir(dir);
    }
    doc_free(&d);
    if (n < 5) {
        fprintf(stderr, "only %d ```pde-error blocks found in %s\n", n, DOC_PATH);
        fail();
    }
    assert_int_equal(failed, 0);
}

/* Every environment variable of runtime/knobs.c is in language.md's table, and nothing in the
 * library or the command reads the environment but knobs.c (and the PETSc module, decomp.c, which
 * cannot call it: its PDEJIT_PETSC_TRACE is in the table; its launcher variables are not knobs). */
static void environment_variables_are_listed(void **state)
{
    (void)state;
    char *doc = tu_read_file(DOC_PATH, NULL);
    assert_non_null(doc);
    for (int k = 0; k < KNOB_COUNT; k++) {
        char cell[80];
        snprintf(cell, sizeof cell, "`%s`", knob_name((pj_knob)k));
        if (!strstr(doc, cell)) fail_msg("docs/language.md does not list %s", knob_name((pj_knob)k));
    }
    free(doc);
    char *out = NULL;
    assert_int_equal(tu_run("cd " PJ_SOURCE_DIR " && grep -l 'getenv(' runtime/*.c compiler/*.c cli/*.c", &out), 0);
    assert_string_equal(out, "runtime/decomp.c\nruntime/knobs.c\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fences_are_tagged),
        cmocka_unit_test(environment_variables_are_listed),
        cmocka_unit_test(pde_examples_run),
        cmocka_unit_test(error_examples_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
