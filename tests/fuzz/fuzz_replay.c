/* fuzz_replay.c — main() for a fuzz target built without libFuzzer: feeds every file named on
 * the command line (a folder: every file in it, in name order) to LLVMFuzzerTestOneInput, once
 * each. ctest runs the regression inputs of tests/fuzz/regressions/ through it, so each input
 * that once crashed or leaked is replayed in the normal and the sanitizer builds. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t used = 0, cap = 0, n;
    do {
        if (used == cap) {
            uint8_t *grown = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!grown) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(buf);
                fclose(in);
                return -1;
            }
            buf = grown;
        }
        n = fread(buf + used, 1, cap - used, in);
        used += n;
    } while (n > 0);
    int failed = ferror(in);
    fclose(in);
    if (failed) {
        perror(path);
        free(buf);
        return -1;
    }
    /* the exact bytes, in a block of their own size, so that a read past the end is caught */
    uint8_t *exact = malloc(used ? used : 1);
    if (exact && used) memcpy(exact, buf, used);
    free(buf);
    if (!exact) return -1;
    LLVMFuzzerTestOneInput(exact, used);
    free(exact);
    printf("replayed %s (%zu bytes)\n", path, used);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_folder(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **grown = realloc(names, sizeof *names * (size_t)(cap = cap ? 2 * cap : 64));
            if (!grown) {
                rc = -1;
                break;
            }
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (replay_file(path) < 0) rc = -1;
        else (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
        return 2;
    }
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) rc |= replay_folder(argv[i], &count) < 0;
        else if (replay_file(argv[i]) < 0) rc = 1;
        else count++;
    }
    printf("%d input%s replayed without a crash\n", count, count == 1 ? "" : "s");
    return rc;
}
