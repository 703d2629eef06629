/* test_restart.c — checkpoints, --resume and --init through the command: a run killed with
 * SIGKILL after a checkpoint and resumed ends with the same dump, byte for byte, as one never
 * stopped; checkpoints of another problem, grid, precision or seed, and damaged ones, are
 * refused with their messages; --init starts from a dump of the same grid. */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>
#include "testutil.h"

/* noise, a nonlinear reaction and diffusion, rk2, outputs every 1 and monitors every 0.25: long
   enough (a few seconds on the interpreter) to be killed in the middle */
static const char prob_long[] =
    "mesh grid(nx = 96, ny = 96)\n"
    "param D = 2e-4\n"
    "field u = 0.5 + 0.1*randn()\n"
    "eq dt(u) = D*lap(u) + u*(1 - u)*(u - 0.3) + 0.05*randn()\n"
    "on left: u = 0.2\n"
    "time dt = 0.005, until = 12, scheme = rk2\n"
    "output every = 1, format = csv\n"
    "monitor every = 0.25, mass = integral(u), peak = maxval(u)\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_cmd(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc) print_message("%s\n-> %d: %s\n", cmd, rc, out ? out : "");
    free(out);
    return rc;
}

/* The output of a command that must fail with status `want`. */
static char *fails(int want, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *fails(int want, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc != want) fail_msg("%s\n-> %d (want %d): %s", cmd, rc, want, out ? out : "");
    return out;
}

/* Killed with SIGKILL after its first checkpoint, resumed: the same dump as a run never stopped,
 * on the interpreter and the CPU JIT, with the seed given. */
static void killed_and_resumed(void **state)
{
    (void)state;
    char path[600], ck[800];
    snprintf(path, sizeof path, "%s/long.pde", tu_dir);
    write_file(path, prob_long);
    const char *backends[] = {"interp", "cpu"};
    for (int b = 0; b < 2; b++) {
        const char *be = backends[b];
        assert_int_equal(run_cmd("cd '%s' && %s run long.pde --quiet --backend %s --threads 2 --seed 77 --out full_%s "
                                 "--checkpoint-every 0.5 --dump full_%s.csv",
                                 tu_dir, PJ_BINARY, be, be, be), 0);
        char out_dir[700];
        snprintf(out_dir, sizeof out_dir, "%s/killed_%s", tu_dir, be);
        snprintf(ck, sizeof ck, "%s/checkpoint.pjc", out_dir);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (chdir(tu_dir) != 0) _exit(127);
            if (!freopen("/dev/null", "w", stderr)) _exit(127);
            execl(PJ_BINARY, PJ_BINARY, "run", "long.pde", "--quiet", "--backend", be, "--threads", "2", "--seed",
                  "77", "--out", out_dir, "--checkpoint-every", "0.5", "--dump", "never.csv", (char *)NULL);
            _exit(127);
        }
        /* killed on its way to the second checkpoint, as soon as the first is there: no clock
           (a loaded machine only takes longer); a run that ended first is a failure below */
        struct stat sb;
        int status, ended = 0;
        while (stat(ck, &sb) != 0 && !(ended = waitpid(pid, &status, WNOHANG) == pid)) usleep(2000);
        if (!ended) {
            assert_int_equal(kill(pid, SIGKILL), 0);
            assert_int_equal(waitpid(pid, &status, 0), pid);
        }
        /* it was still running: killed, not finished (no dump) */
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        snprintf(path, sizeof path, "%s/never.csv", tu_dir);
        assert_int_not_equal(stat(path, &sb), 0);
        /* the monitor rows it took were flushed one by one: at least t = 0 and 0.25 (before the
           first checkpoint), the beginning of the uninterrupted run's file */
        assert_int_equal(run_cmd("cd '%s' && test $(grep -c . killed_%s/monitor.csv) -ge 3 && "
                                 "head -c $(wc -c < killed_%s/monitor.csv) full_%s/monitor.csv | cmp - killed_%s/monitor.csv",
                                 tu_dir, be, be, be, be), 0);
        /* resumed, into the same folder */
        char *out = fails(0, "cd '%s' && %s run long.pde --backend %s --threads 1 --seed 77 --out killed_%s "
                             "--checkpoint-every 0.5 --resume killed_%s/checkpoint.pjc --dump resumed_%s.csv 2>&1",
                          tu_dir, PJ_BINARY, be, be, be, be);
        const char *at = strstr(out, "pdejit: resuming from killed_");
        assert_non_null(at);
        double t_ck = 0;
        long long step = 0;
        assert_int_equal(sscanf(strstr(at, " at t = "), " at t = %lf, step %lld", &t_ck, &step), 2);
        print_message("%s: killed after t = %g (step %lld), resumed\n", be, t_ck, step);
        assert_true(t_ck >= 0.5 && t_ck < 12 && step > 0);
        free(out);
        assert_int_equal(run_cmd("cd '%s' && cmp full_%s.csv resumed_%s.csv", tu_dir, be, be), 0);
        /* the series went on: the folder holds what the uninterrupted run's holds, file for file
           (monitor.csv too: the rows before the checkpoint kept, the others taken again) */
        assert_int_equal(run_cmd("cd '%s' && test $(ls full_%s | wc -l) = 16 && for f in $(ls full_%s); do "
                                 "cmp full_%s/$f killed_%s/$f || exit 1; done && test $(ls killed_%s | wc -l) = 16",
                                 tu_dir, be, be, be, be, be), 0);
    }
    /* the interpreter's and the JIT's runs are the same bits too */
    assert_int_equal(run_cmd("cd '%s' && cmp full_interp.csv full_cpu.csv", tu_dir), 0);
}

/* Writes n bytes at offset into the checkpoint at path and sets its checksum again (the XXH3-128
 * of everything before it, its last 16 bytes): a checkpoint as pdejit would have written it. The
 * header (runtime/checkpoint.c) follows the 18-byte magic: the format version at 18, the time
 * (a double) at 18 + 88. */
static void patch_checkpoint(const char *path, size_t offset, const void *data, size_t n)
{
    size_t len;
    char *buf = tu_read_file(path, &len);
    assert_non_null(buf);
    assert_true(len > offset + n + 16);
    memcpy(buf + offset, data, n);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(buf, len - 16));
    memcpy(buf + len - 16, sum.digest, 16);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

static void set_checkpoint_time(const char *path, double t) { patch_checkpoint(path, 18 + 88, &t, sizeof t); }

/* A checkpoint whose time is far beyond the run's output times (t = 1e300: the next multiple of
 * `every` is not representable apart from t) resumes at once: nothing is left to step, the dump is
 * written (the search for the next output time spun for ever, deaf to SIGTERM). */
static void far_time_resumes_at_once(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/far.pde", tu_dir);
    write_file(path, "mesh grid(nx = 20)\nfield u = x\neq dt(u) = 0.01*lap(u)\ntime dt = 0.01, steps = 10\n"
                     "output every = 0.05, format = csv\nmonitor every = 0.05, m = integral(u)\n");
    assert_int_equal(run_cmd("cd '%s' && %s run far.pde --quiet --out far_ck --checkpoint-every 0.05", tu_dir, PJ_BINARY), 0);
    snprintf(path, sizeof path, "%s/far_ck/checkpoint.pjc", tu_dir);
    set_checkpoint_time(path, 1e300);
    char *out = fails(0, "cd '%s' && timeout -k 5 60 %s run far.pde --out far_ck --resume far_ck/checkpoint.pjc "
                         "--dump far.csv 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: resuming from far_ck/checkpoint.pjc at t = 1e+300, step 10\n");
    free(out);
    assert_int_equal(run_cmd("cd '%s' && test $(grep -c . far.csv) = 21", tu_dir), 0);
}

/* A FIFO named as the checkpoint of --resume or the dump of --init is refused at once, not waited
 * for (no writer ever comes): the open does not block and only a regular file is read. */
static void fifos_are_refused(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/f.pde", tu_dir);
    write_file(path, "mesh grid(nx = 20)\nfield u = x\neq dt(u) = 0.01*lap(u)\ntime dt = 0.01, steps = 10\n");
    assert_int_equal(run_cmd("cd '%s' && mkfifo fifo.pjc fifo.csv", tu_dir), 0);
    char *out = fails(2, "cd '%s' && timeout -k 5 30 %s run f.pde --quiet --resume fifo.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: fifo.pjc: not a regular file\n");
    free(out);
    out = fails(2, "cd '%s' && timeout -k 5 30 %s run f.pde --quiet --init fifo.csv 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: --init fifo.csv: not a regular file\n");
    free(out);
}

/* A checkpoint resumes only its own problem, grid, precision and seed, and only when whole. */
static void refusals(void **state)
{
    (void)state;
    static const char small[] = "mesh grid(nx = 20, ny = 10)\nfield u = x*y\neq dt(u) = 0.01*lap(u)\n"
                                "time dt = 0.01, steps = 10\n";
    static const char other_grid[] = "mesh grid(nx = 21, ny = 10)\nfield u = x*y\neq dt(u) = 0.01*lap(u)\n"
                                     "time dt = 0.01, steps = 10\n";
    static const char other_eq[] = "mesh grid(nx = 20, ny = 10)\nfield u = x*y\neq dt(u) = 0.02*lap(u)\n"
                                   "time dt = 0.01, steps = 10\n";
    char path[600];
    snprintf(path, sizeof path, "%s/small.pde", tu_dir);
    write_file(path, small);
    snprintf(path, sizeof path, "%s/other_grid.pde", tu_dir);
    write_file(path, other_grid);
    snprintf(path, sizeof path, "%s/other_eq.pde", tu_dir);
    write_file(path, other_eq);
    assert_int_equal(run_cmd("cd '%s' && %s run small.pde --quiet --out ck --checkpoint-every 0.05", tu_dir, PJ_BINARY), 0);
    char *out = fails(2, "cd '%s' && %s run other_grid.pde --quiet --resume ck/checkpoint.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: ck/checkpoint.pjc: the checkpoint's grid is 20 x 10 cells on [0, 1] x [0, 1], "
                             "this problem's is 21 x 10 cells on [0, 1] x [0, 1]: a checkpoint resumes only on the "
                             "grid it was written on\n");
    free(out);
    out = fails(2, "cd '%s' && %s run other_eq.pde --quiet --resume ck/checkpoint.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: ck/checkpoint.pjc: the checkpoint was written by another problem (its fields, "
                             "equations, boundary conditions or scheme differ from this one's)\n");
    free(out);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --precision single --resume ck/checkpoint.pjc 2>&1", tu_dir,
                PJ_BINARY);
    assert_string_equal(out, "pdejit: ck/checkpoint.pjc: the checkpoint was written in double precision, this run is "
                             "in single\n");
    free(out);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --seed 5 --resume ck/checkpoint.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: ck/checkpoint.pjc: the checkpoint was written with --seed 0, this run has --seed 5\n");
    free(out);
    /* the params and the dt of the run that wrote it: others are refused as another seed is (the run
       went on with them without a word) */
    static const char with_param[] = "mesh grid(nx = 20, ny = 10)\nparam D = 0.01\nfield u = x*y\neq dt(u) = D*lap(u)\n"
                                     "time dt = 0.01, steps = 10\n";
    snprintf(path, sizeof path, "%s/param.pde", tu_dir);
    write_file(path, with_param);
    assert_int_equal(run_cmd("cd '%s' && %s run param.pde --quiet --out ckp --checkpoint-every 0.05 --set D=0.02", tu_dir,
                             PJ_BINARY), 0);
    out = fails(2, "cd '%s' && %s run param.pde --quiet --resume ckp/checkpoint.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: ckp/checkpoint.pjc: the checkpoint was written with D = 0.02, this run has "
                             "D = 0.01 (--set)\n");
    free(out);
    out = fails(2, "cd '%s' && %s run param.pde --quiet --set D=0.02 --dt 0.005 --resume ckp/checkpoint.pjc 2>&1", tu_dir,
                PJ_BINARY);
    assert_string_equal(out, "pdejit: param.pde: the checkpoint ckp/checkpoint.pjc was written by a run with dt = 0.01, "
                             "this run has dt = 0.005: a run resumes with the dt it was written with\n");
    free(out);
    assert_int_equal(run_cmd("cd '%s' && %s run param.pde --quiet --set D=0.02 --resume ckp/checkpoint.pjc", tu_dir,
                             PJ_BINARY), 0);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --resume small.pde 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: small.pde: not a pdejit checkpoint\n");
    free(out);
    /* one byte changed in the values; then cut short */
    assert_int_equal(run_cmd("cd '%s' && cp ck/checkpoint.pjc bad.pjc && printf '\\001' | dd of=bad.pjc bs=1 seek=300 "
                             "conv=notrunc 2>/dev/null && head -c 1000 ck/checkpoint.pjc > short.pjc",
                             tu_dir), 0);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --resume bad.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: bad.pjc: damaged checkpoint (checksum mismatch)\n");
    free(out);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --resume short.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: short.pjc: damaged checkpoint (not the length it says)\n");
    free(out);
    /* one bit flipped in the header (the seed's bit 12; the grid's nx 20 -> 21): damage, found by the checksum
       and the length before the header is believed (it read as "written with --seed 4096") */
    assert_int_equal(run_cmd("cd '%s' && cp ck/checkpoint.pjc seed.pjc && printf '\\020' | dd of=seed.pjc bs=1 seek=123 "
                             "conv=notrunc 2>/dev/null && cp ck/checkpoint.pjc grid.pjc && printf '\\025' | dd of=grid.pjc "
                             "bs=1 seek=26 conv=notrunc 2>/dev/null",
                             tu_dir), 0);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --resume seed.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: seed.pjc: damaged checkpoint (checksum mismatch)\n");
    free(out);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --resume grid.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: grid.pjc: damaged checkpoint (not the length it says)\n");
    free(out);
    /* a newer format is named as such (it read as "not a pdejit checkpoint") */
    assert_int_equal(run_cmd("cd '%s' && cp ck/checkpoint.pjc v7.pjc", tu_dir), 0);
    char v7[700];
    snprintf(v7, sizeof v7, "%s/v7.pjc", tu_dir);
    const uint32_t seven = 7;
    patch_checkpoint(v7, 18, &seven, sizeof seven);
    out = fails(2, "cd '%s' && %s run small.pde --quiet --resume v7.pjc 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: v7.pjc: a checkpoint of format version 7, written by a newer pdejit: this one "
                             "reads version 2\n");
    free(out);
    /* a whole one is taken: a run stopped after 7 steps (its last checkpoint at t = 0.05, step 5)
       resumed to the end is the run of 10 steps */
    assert_int_equal(run_cmd("cd '%s' && %s run small.pde --quiet --dump a.csv && %s run small.pde --quiet --steps 7 "
                             "--out ck7 --checkpoint-every 0.05 && %s run small.pde --resume ck7/checkpoint.pjc "
                             "--dump b.csv 2>resume.txt && cmp a.csv b.csv && grep -q 'at t = 0.05, step 5$' resume.txt",
                             tu_dir, PJ_BINARY, PJ_BINARY, PJ_BINARY), 0);
    /* nothing was left half-written beside it */
    assert_int_equal(run_cmd("cd '%s' && ! (ls -A ck; ls -A ck7) | grep -v '^snapshot' | grep -v '^checkpoint.pjc$' | grep .",
                             tu_dir), 0);
    out = fails(2, "cd '%s' && %s run small.pde --out none --checkpoint-every 1 2>&1", tu_dir, PJ_BINARY);
    assert_non_null(strstr(out, "checkpoints are written into the output folder: give one (out_dir, --out)"));
    free(out);
}

/* Four coupled fields of different values, so that a checkpoint holding one field in another's
 * place, or a field's values shifted, shows. */
static const char prob_four[] = "mesh grid(nx = 64, ny = 48)\n"
                                "field u = x*y\nfield v = x + y\nfield w = sin(3*x)\nfield q = cos(2*y)\n"
                                "eq dt(u) = 0.01*lap(u) + v - q\neq dt(v) = 0.02*lap(v) - u\n"
                                "eq dt(w) = 0.01*lap(w) + q*u\neq dt(q) = 0.005*lap(q) + 0.1*w\n"
                                "on left: u = 1\non right: v = 0\n"
                                "time dt = 0.001, steps = 100\n"
                                "output every = 1, format = png, fields = u\n";

/* A problem of several fields stopped after its checkpoint at step 50 (a run of 70 steps) and
 * resumed to step 100 ends with the same dump as the run of 100 steps: byte for byte under the
 * explicit schemes, to the solver's tolerance under the implicit ones (language.md: PETSc starts
 * afresh). The problems of the other restart tests have one field, where a writer that stores the
 * wrong field passes. */
static void several_fields_resumed(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/four.pde", tu_dir);
    write_file(path, prob_four);
    const char *schemes[] = {"euler", "rk2", "rk3", "rk4", "beuler", "cn"};
    for (int i = 0; i < 6; i++) {
        const char *s = schemes[i];
        assert_int_equal(run_cmd("cd '%s' && rm -rf four_%s && %s run four.pde --quiet --scheme %s --dump four_full_%s.csv "
                                 "&& %s run four.pde --quiet --scheme %s --steps 70 --out four_%s --checkpoint-every 0.05 "
                                 "&& %s run four.pde --scheme %s --out four_%s --resume four_%s/checkpoint.pjc "
                                 "--dump four_resumed_%s.csv 2> four_%s.txt && grep -q 'at t = 0.05, step 50$' four_%s.txt",
                                 tu_dir, s, PJ_BINARY, s, s, PJ_BINARY, s, s, PJ_BINARY, s, s, s, s, s, s), 0);
        assert_int_equal(run_cmd("cd '%s' && head -1 four_resumed_%s.csv | grep -qx 'x,y,u,v,w,q' && "
                                 "test $(wc -l < four_resumed_%s.csv) = 3073", tu_dir, s, s), 0);
        if (i < 4) {
            assert_int_equal(run_cmd("cd '%s' && cmp four_full_%s.csv four_resumed_%s.csv", tu_dir, s, s), 0);
        } else { /* every value within 1e-9 relative (of the field's scale, 1) */
            assert_int_equal(run_cmd("cd '%s' && paste -d, four_full_%s.csv four_resumed_%s.csv | awk -F, 'NR > 1 { "
                                     "for (c = 3; c <= 6; c++) { d = $c - $(c + 6); if (d < 0) d = -d; "
                                     "if (d > 1e-9) bad++ } } END { exit bad > 0 }'", tu_dir, s, s), 0);
        }
    }
    /* and a stop differs: the comparison sees a field's change */
    assert_int_equal(run_cmd("cd '%s' && %s run four.pde --quiet --steps 99 --dump four_99.csv && "
                             "! cmp -s four_99.csv four_full_euler.csv", tu_dir, PJ_BINARY), 0);
}

/* The checkpoint's files and path: the temporary files of a checkpoint a killed run was writing
 * (.checkpoint.pjc.XXXXXX, up to a whole checkpoint each) are removed by the next run into the
 * folder, and only they; a checkpoint that cannot be written there is refused before the first
 * step (exit 2, nothing written) instead of failing the run at its first checkpoint; a file size
 * limit (ulimit -f) fails the write with the file named, exit 1, the previous checkpoint whole and
 * no temporary left (SIGXFSZ killed the command without a word, leaving its temporary file). */
static void checkpoint_files_and_paths(void **state)
{
    (void)state;
    static const char small[] = "mesh grid(nx = 20, ny = 10)\nfield u = x*y\neq dt(u) = 0.01*lap(u)\n"
                                "time dt = 0.01, steps = 10\n";
    char path[600];
    snprintf(path, sizeof path, "%s/cpath.pde", tu_dir);
    write_file(path, small);
    /* temporaries left by a kill -9: removed; a name that only looks like one, and a folder, stay */
    assert_int_equal(run_cmd("cd '%s' && rm -rf tk && mkdir tk && head -c 5000 /dev/zero > tk/.checkpoint.pjc.AbC123 && "
                             "touch tk/.checkpoint.pjc.toolong1 && mkdir tk/.checkpoint.pjc.Dir123 && "
                             "%s run cpath.pde --quiet --out tk --checkpoint-every 0.05 && "
                             "test \"$(ls -A tk | tr '\\n' ' ')\" = '.checkpoint.pjc.Dir123 .checkpoint.pjc.toolong1 "
                             "checkpoint.pjc snapshot_000000.csv snapshot_000001.csv snapshots.csv '",
                             tu_dir, PJ_BINARY), 0);
    /* ... and by a resumed run, which never takes one for the checkpoint */
    assert_int_equal(run_cmd("cd '%s' && head -c 300 tk/checkpoint.pjc > tk/.checkpoint.pjc.Zz9876 && "
                             "%s run cpath.pde --quiet --out tk --resume tk/checkpoint.pjc --checkpoint-every 0.05 && "
                             "test ! -e tk/.checkpoint.pjc.Zz9876", tu_dir, PJ_BINARY), 0);
    /* a folder in the checkpoint's place: refused before the first step, nothing written */
    char *out = fails(2, "cd '%s' && rm -rf dk && mkdir -p dk/checkpoint.pjc && %s run cpath.pde --quiet --out dk "
                         "--checkpoint-every 0.05 2>&1 && ls -A dk", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: cpath.pde: cannot write the checkpoint dk/checkpoint.pjc: Is a directory\n");
    free(out);
    assert_int_equal(run_cmd("cd '%s' && test \"$(ls -A dk)\" = checkpoint.pjc", tu_dir), 0);
    /* a read-only output folder (as nobody where the suite runs as root: root writes anywhere) */
    if (geteuid() != 0 || run_cmd("command -v setpriv >/dev/null") == 0) {
        const char *as = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups" : "";
        assert_int_equal(run_cmd("cd '%s' && chmod 711 . && chmod 644 cpath.pde && rm -rf rok rocache && mkdir rok rocache "
                                 "&& chmod 555 rok && { [ $(id -u) != 0 ] || chown 65534:65534 rok rocache; }", tu_dir), 0);
        out = fails(2, "cd '%s' && PDEJIT_CACHE_DIR=rocache %s %s run cpath.pde --quiet --out rok --checkpoint-every 0.05 "
                       "2>&1", tu_dir, as, PJ_BINARY);
        assert_string_equal(out, "pdejit: cpath.pde: cannot write in the output folder rok: Permission denied\n");
        free(out);
        assert_int_equal(run_cmd("cd '%s' && test -z \"$(ls -A rok)\"", tu_dir), 0);
        /* a folder that cannot be made (a checkpoint at /nonexistent/dir/x) */
        out = fails(2, "cd '%s' && PDEJIT_CACHE_DIR=rocache %s %s run cpath.pde --quiet --out /nonexistent-pdejit/dir/x "
                       "--checkpoint-every 0.05 2>&1", tu_dir, as, PJ_BINARY);
        assert_string_equal(out, "pdejit: cpath.pde: cannot create the output folder /nonexistent-pdejit/dir/x: /nonexistent-pdejit: "
                                 "Permission denied\n");
        free(out);
    } else {
        print_message("(read-only folder: skipped, running as root without setpriv)\n");
    }
    /* a file size limit below the checkpoint's size (131 kB; 32 kB in sh's 512-byte blocks): the
       snapshots (a small PNG) are written, the checkpoint is not, the previous one stays whole */
    snprintf(path, sizeof path, "%s/four.pde", tu_dir);
    write_file(path, prob_four);
    assert_int_equal(run_cmd("cd '%s' && rm -rf fz && %s run four.pde --quiet --out fz --checkpoint-every 0.05 && "
                             "cp fz/checkpoint.pjc fz_before.pjc", tu_dir, PJ_BINARY), 0);
    out = fails(1, "cd '%s' && (ulimit -f 64; exec %s run four.pde --quiet --out fz --checkpoint-every 0.05 --steps 120) "
                   "2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit: run failed: cannot write the checkpoint fz/checkpoint.pjc: File too large\n");
    free(out);
    assert_int_equal(run_cmd("cd '%s' && cmp fz_before.pjc fz/checkpoint.pjc && ! ls -A fz | grep -q '^[.]checkpoint' && "
                             "%s run four.pde --quiet --out fz --resume fz/checkpoint.pjc --steps 120 --dump fz.csv",
                             tu_dir, PJ_BINARY), 0);
}

/* --init: the fields of a dump come back to the bit (its 17 digits give back every double), so a
 * run from it and its own dump agree; columns not named keep their initial values; refused when
 * the dump is not of this grid or problem. */
static void init_from_dump(void **state)
{
    (void)state;
    static const char heat[] = "mesh grid(nx = 30, ny = 12, Lx = 3, Ly = 1.2)\nfield u = exp(-(x - 1)^2)*(1 + y)\n"
                               "field k = 1 + 0.5*x\n"
                               "eq dt(u) = div(0.01*k*grad(u))\non left: u = 1\ntime dt = 0.01, steps = 100\n";
    char path[600];
    snprintf(path, sizeof path, "%s/heat.pde", tu_dir);
    write_file(path, heat);
    assert_int_equal(run_cmd("cd '%s' && %s run heat.pde --quiet --dump h100.csv && %s run heat.pde --quiet --steps 0 "
                             "--init h100.csv --dump again.csv && cmp h100.csv again.csv",
                             tu_dir, PJ_BINARY, PJ_BINARY), 0);
    /* one step from the dump, in one run: the same as the dump's own next step */
    assert_int_equal(run_cmd("cd '%s' && %s run heat.pde --quiet --steps 1 --init h100.csv --dump n1.csv && %s run "
                             "heat.pde --quiet --steps 1 --init again.csv --dump n2.csv && cmp n1.csv n2.csv && "
                             "! cmp -s n1.csv h100.csv",
                             tu_dir, PJ_BINARY, PJ_BINARY), 0);
    /* only u named: k keeps its initial value 1 + 0.5 x (the dump's k column is that too) */
    assert_int_equal(run_cmd("cd '%s' && cut -d, -f1,2,3 h100.csv > only_u.csv && %s run heat.pde --quiet --steps 0 "
                             "--init only_u.csv --dump c.csv && cmp h100.csv c.csv",
                             tu_dir, PJ_BINARY), 0);
    assert_int_equal(run_cmd("cd '%s' && head -1 h100.csv | grep -qx 'x,y,u,k'", tu_dir), 0);
    char *out = fails(2, "cd '%s' && head -50 h100.csv > cut.csv && %s run heat.pde --quiet --init cut.csv 2>&1", tu_dir,
                      PJ_BINARY);
    assert_string_equal(out, "pdejit: --init cut.csv: 49 rows where the grid has 360 cells: not a dump of this grid\n");
    free(out);
    out = fails(2, "cd '%s' && sed '1s/,u,/,w,/' h100.csv > w.csv && %s run heat.pde --quiet --init w.csv 2>&1", tu_dir,
                PJ_BINARY);
    assert_string_equal(out, "pdejit: --init w.csv: column 'w' is not a field of the problem\n");
    free(out);
    out = fails(2, "cd '%s' && %s run heat.pde --quiet --init h100.csv --resume h100.csv 2>&1", tu_dir, PJ_BINARY);
    assert_string_equal(out, "pdejit run: --resume and --init both set the fields: give one\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals),
        cmocka_unit_test(init_from_dump),
        cmocka_unit_test(far_time_resumes_at_once),
        cmocka_unit_test(fifos_are_refused),
        cmocka_unit_test(several_fields_resumed),
        cmocka_unit_test(checkpoint_files_and_paths),
        cmocka_unit_test(killed_and_resumed),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
