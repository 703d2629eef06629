/* test_hostmem.c — the host memory a run may take, and the limit named when a problem does not
 * fit (issue 25): MemAvailable, the cgroup v2 and v1 limits of the process's group (read from a
 * made-up /proc and /sys under a temporary root), and the address-space limit (RLIMIT_AS) less
 * the process's VmSize, the smallest winning; and, for real, a run under `ulimit -v` that needs
 * more is refused with the sizes and exit 2, not "Cannot allocate memory". */
#include "testutil.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "grid.h"

/* Writes text to tu_dir/ROOT/PATH, making the folders on the way. */
static void put(const char *root, const char *path, const char *text)
{
    char full[2048];
    snprintf(full, sizeof full, "%s/%s/%s", tu_dir, root, path);
    for (char *s = full + strlen(tu_dir) + 1; (s = strchr(s, '/')); s++) {
        *s = 0;
        assert_true(mkdir(full, 0700) == 0 || errno == EEXIST);
        *s = '/';
    }
    FILE *f = fopen(full, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static double at(const char *root, double rlimit_as, const char **which)
{
    char full[2048];
    snprintf(full, sizeof full, "%s/%s", tu_dir, root);
    return grid_host_memory_at(full, rlimit_as, which);
}

static const char *V1 = " (the cgroup v1 limit memory.limit_in_bytes)", *V2 = " (the cgroup v2 limit memory.max)",
                  *AS = " (the address-space limit, ulimit -v)", *MEMINFO = " (MemAvailable)";

/* A cgroup v1 memory limit: the group's (limit - usage) in /sys/fs/cgroup/memory/GROUP, where
 * /proc/self/cgroup's "memory" line names GROUP (its controllers listed with others), or the
 * group above it when the deeper one is absent (a container's own group is its root). */
static void cgroup_v1(void **state)
{
    (void)state;
    const char *which = NULL;
    put("v1", "proc/meminfo", "MemTotal:       32000000 kB\nMemAvailable:    8000000 kB\n");
    put("v1", "proc/self/cgroup", "5:cpu,cpuacct:/\n4:memory,hugetlb:/jobs/one\n0::/\n");
    put("v1", "sys/fs/cgroup/memory/jobs/one/memory.limit_in_bytes", "3000000000\n");
    put("v1", "sys/fs/cgroup/memory/jobs/one/memory.usage_in_bytes", "1000000000\n");
    put("v1", "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("v1", "sys/fs/cgroup/memory/memory.usage_in_bytes", "5000000000\n");
    assert_true(at("v1", -1, &which) == 2e9);
    assert_string_equal(which, V1);
    /* a parent group's lower remainder wins */
    put("v1", "sys/fs/cgroup/memory/jobs/memory.limit_in_bytes", "2500000000\n");
    put("v1", "sys/fs/cgroup/memory/jobs/memory.usage_in_bytes", "1500000000\n");
    assert_true(at("v1", -1, &which) == 1e9);
    assert_string_equal(which, V1);
    /* usage above the limit leaves nothing, not a negative size */
    put("v1", "sys/fs/cgroup/memory/jobs/memory.usage_in_bytes", "2600000000\n");
    assert_true(at("v1", -1, &which) == 0);
    /* inside a container the group named is absent under the mount: its root's limit counts */
    put("c1", "proc/meminfo", "MemAvailable:    8000000 kB\n");
    put("c1", "proc/self/cgroup", "4:memory:/docker/abc\n");
    put("c1", "sys/fs/cgroup/memory/memory.limit_in_bytes", "1500000000\n");
    put("c1", "sys/fs/cgroup/memory/memory.usage_in_bytes", "500000000\n");
    assert_true(at("c1", -1, &which) == 1e9);
    assert_string_equal(which, V1);
    /* an unlimited group leaves MemAvailable the limit */
    put("c1", "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    assert_true(at("c1", -1, &which) == 8000000 * 1024.0);
    assert_string_equal(which, MEMINFO);
}

/* cgroup v2 (the "0::" line; "max" is no limit) and RLIMIT_AS less VmSize; the smallest names
 * itself; nothing readable is no limit. */
static void cgroup_v2_and_address_space(void **state)
{
    (void)state;
    const char *which = NULL;
    put("v2", "proc/meminfo", "MemAvailable:    8000000 kB\n");
    put("v2", "proc/self/cgroup", "0::/user/job\n");
    put("v2", "proc/self/status", "Name:\tpdejit\nVmPeak:\t 2000000 kB\nVmSize:\t 1000000 kB\nVmRSS:\t 1000 kB\n");
    put("v2", "sys/fs/cgroup/user/job/memory.max", "max\n");
    put("v2", "sys/fs/cgroup/user/job/memory.current", "100\n");
    put("v2", "sys/fs/cgroup/user/memory.max", "4000000000\n");
    put("v2", "sys/fs/cgroup/user/memory.current", "1000000000\n");
    assert_true(at("v2", -1, &which) == 3e9);
    assert_string_equal(which, V2);
    assert_true(at("v2", 5e9, &which) == 3e9);
    assert_string_equal(which, V2);
    assert_true(at("v2", 2e9, &which) == 2e9 - 1024e6);
    assert_string_equal(which, AS);
    assert_true(at("v2", 1e9, &which) == 0); /* already mapped more than the limit */
    assert_string_equal(which, AS);
    assert_true(isinf(at("none", -1, &which)));
    assert_string_equal(which, "");

    char err[256];
    double v1 = at("v1", -1, &which);
    assert_int_equal(grid_memory_check(12, 3.2e9, v1, which, err, sizeof err), -1);
    assert_string_equal(err, "the problem needs 38.4 GB (12 buffers of 3.2 GB); 0.0 kB are available (the cgroup v1 "
                             "limit memory.limit_in_bytes)");
}

/* For real: under `ulimit -v 3000000` (3.07 GB) a 6000^2 problem of three RK4 fields (12 buffers
 * of 288 MB, 3.5 GB, less than MemAvailable on a test machine) is refused before it allocates,
 * exit 2, with the address-space limit named; a small problem still runs under the same limit. */
static void run_under_ulimit_v(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* AddressSanitizer's shadow memory cannot live under ulimit -v */
#else
    put(".", "mid.pde", "mesh grid(nx = 6000, ny = 6000)\nfield u = 1\nfield v = 0\nfield w = 0\n"
                        "eq dt(u) = lap(u)\neq dt(v) = lap(v)\neq dt(w) = lap(w)\n"
                        "time dt = 0.001, steps = 2, scheme = rk4\n");
    put(".", "small.pde", "mesh grid(nx = 16)\nfield u = x\neq dt(u) = lap(u)\ntime dt = 0.001, steps = 2\n");
    char *out;
    for (int be = 0; be < 2; be++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "cd %s && ulimit -v 3000000 && PDEJIT_CACHE_DIR=%s/cache %s run mid.pde --backend %s "
                 "--out none", tu_dir, tu_dir, PJ_BINARY, be ? "cpu" : "interp");
        assert_int_equal(tu_run(cmd, &out), 2);
        print_message("%s", out);
        const char *head = "pdejit: mid.pde: the problem needs 3.5 GB (12 buffers of 288.", *tail = AS;
        assert_memory_equal(out, head, strlen(head));
        assert_non_null(strstr(out, " GB are available"));
        size_t n = strlen(out);
        assert_true(n > strlen(tail) + 1 && !strncmp(out + n - 1 - strlen(tail), tail, strlen(tail)));
        double avail = atof(strstr(out, "); ") + 3);
        assert_true(avail > 0 && avail < 3.08);
        free(out);
        assert_int_equal(tu_pdejit(&out, "run small.pde --backend %s --out none --dump s%d.csv", be ? "cpu" : "interp", be), 0);
        free(out);
        snprintf(cmd, sizeof cmd, "cd %s && ulimit -v 3000000 && PDEJIT_CACHE_DIR=%s/cache %s run small.pde --backend %s "
                 "--out none --dump t%d.csv && cmp s%d.csv t%d.csv", tu_dir, tu_dir, PJ_BINARY, be ? "cpu" : "interp", be,
                 be, be);
        assert_int_equal(tu_run(cmd, &out), 0);
        free(out);
    }
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cgroup_v1),
        cmocka_unit_test(cgroup_v2_and_address_space),
        cmocka_unit_test(run_under_ulimit_v),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
