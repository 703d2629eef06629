/* hostmem.c — how much host memory a new simulation may take, and which limit says so: the
 * host's MemAvailable, the cgroup v2 and v1 memory limits of the process's group, and the
 * address-space limit (RLIMIT_AS) less what the process already maps (see grid.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "grid.h"
#include "knobs.h"

/* The first number in the file at path (a cgroup file holds one, or "max"); -1 when absent. */
static double read_number_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    double v = -1;
    if (fscanf(f, "%lf", &v) != 1) v = -1;
    fclose(f);
    return v;
}

/* The "NAME: N kB" line of a /proc file, in bytes; -1 when absent. */
static double read_kb_line(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, name, n) && line[n] == ':') {
            unsigned long long kb;
            if (sscanf(line + n + 1, " %llu kB", &kb) == 1) v = (double)kb * 1024;
            break;
        }
    fclose(f);
    return v;
}

/* The group path of this process in /proc/self/cgroup for cgroup v2 (the "0::" line, v2 set) or
 * for v1's memory controller (a line whose controller list holds "memory", v2 clear): copied to
 * out ("" for the root); 0, or -1 when there is no such line. */
static int cgroup_path(const char *root, int v2, char *out, size_t len)
{
    char path[1100], line[1024];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = 0;
        int match = 0;
        if (v2) match = !strcmp(line, "0:");
        else
            for (char *tok = strtok(c1 + 1, ","); tok && !match; tok = strtok(NULL, ","))
                match = !strcmp(tok, "memory");
        if (match) {
            snprintf(out, len, "%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* The least that a limit file less a usage file leaves, in the group `group` under `mount` and in
 * each group above it (a container sees its own group as the root, where the deeper files are
 * absent); INFINITY when no pair can be read. */
static double cgroup_remainder(const char *mount, const char *group, const char *limit, const char *usage)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s%s", mount, group);
    size_t base = strlen(mount);
    double left = INFINITY;
    for (;;) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, limit);
        double max = read_number_file(path); /* "max": no limit, reads as -1 */
        snprintf(path, sizeof path, "%s/%s", dir, usage);
        double current = read_number_file(path);
        if (max >= 0 && current >= 0) left = fmin(left, max > current ? max - current : 0);
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < base) break;
        *slash = 0;
    }
    return left;
}

double grid_host_memory_at(const char *root, double rlimit_as, const char **which)
{
    const char *by = "";
    double available = INFINITY, v;
    char path[1100], group[1024];
    snprintf(path, sizeof path, "%s/proc/meminfo", root);
    if ((v = read_kb_line(path, "MemAvailable")) >= 0) available = v, by = " (MemAvailable)";
    snprintf(path, sizeof path, "%s/sys/fs/cgroup", root);
    if (!cgroup_path(root, 1, group, sizeof group) &&
        (v = cgroup_remainder(path, group, "memory.max", "memory.current")) < available)
        available = v, by = " (the cgroup v2 limit memory.max)";
    snprintf(path, sizeof path, "%s/sys/fs/cgroup/memory", root);
    if (!cgroup_path(root, 0, group, sizeof group) &&
        (v = cgroup_remainder(path, group, "memory.limit_in_bytes", "memory.usage_in_bytes")) < available)
        available = v, by = " (the cgroup v1 limit memory.limit_in_bytes)";
    if (rlimit_as >= 0) {
        snprintf(path, sizeof path, "%s/proc/self/status", root);
        double mapped = read_kb_line(path, "VmSize");
        v = rlimit_as - (mapped > 0 ? mapped : 0);
        if (v < available) available = v > 0 ? v : 0, by = " (the address-space limit, ulimit -v)";
    }
    if (which) *which = by;
    return available;
}

double grid_host_memory_limit(const char **which)
{
    const char *forced = knob(KNOB_MEMORY_AVAILABLE);
    if (forced) {
        char *end;
        double v = strtod(forced, &end);
        if (!*end && v >= 0) {
            if (which) *which = "";
            return v;
        }
    }
    struct rlimit r;
    double as = getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY ? (double)r.rlim_cur : -1;
    return grid_host_memory_at("", as, which);
}

double grid_host_memory_available(void) { return grid_host_memory_limit(NULL); }
