/* fuzz_cache_seeds.c — writes the seed corpus of fuzz_cache_entry into a folder: entries the
 * cache itself stored under the fixed key (payloads of several sizes), each cut short at the
 * places its header's fields end, and a few one-field changes (format, key length, payload
 * length, checksum).
 *
 *   fuzz_cache_seeds FOLDER */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cache_fixture.h"

static int write_seed(const char *dir, const char *name, const unsigned char *bytes, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *out = fopen(path, "wb");
    if (!out || (len && fwrite(bytes, 1, len, out) != len) || fclose(out) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    static const size_t payload_sizes[] = {0, 1, 15, 100, 4000};
    int rc = 0, written = 0;
    for (size_t s = 0; s < sizeof payload_sizes / sizeof *payload_sizes; s++) {
        size_t plen = payload_sizes[s];
        unsigned char *payload = malloc(plen + 1);
        for (size_t i = 0; i < plen; i++) payload[i] = (unsigned char)(i * 131 + 7);
        cache_fixture f;
        char err[PATH_MAX + 128];
        if (fixture_open(&f, payload, plen, err, sizeof err) < 0) {
            fprintf(stderr, "fuzz_cache_seeds: %s\n", err);
            free(payload);
            return 1;
        }
        size_t len = 0;
        unsigned char *entry = fixture_read_entry(&f, &len);
        fixture_close(&f);
        free(payload);
        if (!entry || len < 40) {
            fprintf(stderr, "fuzz_cache_seeds: the cache wrote a %zu-byte entry\n", len);
            free(entry);
            return 1;
        }
        char name[64];
        snprintf(name, sizeof name, "valid-%zu", plen);
        rc |= write_seed(dir, name, entry, len);
        written++;
        if (s == 2) { /* cut short, and one field at a time changed, on one entry */
            size_t key_end = 40 + (size_t)(entry[12] | entry[13] << 8);
            size_t cuts[] = {0, 7, 8, 12, 16, 24, 39, 40, key_end - 1, key_end, len - 1};
            for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
                if (cuts[i] > len) continue;
                snprintf(name, sizeof name, "cut-%zu", cuts[i]);
                rc |= write_seed(dir, name, entry, cuts[i]);
                written++;
            }
            static const struct { const char *name; size_t at; } changes[] = {
                {"format", 8}, {"key-length", 12}, {"payload-length", 16}, {"checksum", 24}, {"key-text", 41},
                {"payload", 0 /* the last byte */}};
            for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
                size_t at = changes[i].at ? changes[i].at : len - 1;
                entry[at] ^= 1;
                snprintf(name, sizeof name, "changed-%s", changes[i].name);
                rc |= write_seed(dir, name, entry, len);
                entry[at] ^= 1;
                written++;
            }
        }
        free(entry);
    }
    printf("fuzz_cache_seeds: %d seeds in %s\n", written, dir);
    return rc ? 1 : 0;
}
