/* kir_metric.c — the metric tables METRIC nodes read (kir.h, kir_metric): their memory, counted
 * references and content hash. What goes in them is the mesh's business (compiler/mesh.c). */
#include "kir.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <xxhash.h>

const char *const kir_metric_names[KIR_MT_KINDS] = {"face", "dist", "invdist", "area", "vol", "invvol", "laphi", "laplo"};

kir_metric *kir_metric_new(void)
{
    kir_metric *m = calloc(1, sizeof *m);
    if (m) m->refs = 1;
    return m;
}

int kir_metric_axis(kir_metric *m, int a, int64_t n)
{
    int64_t len = n + 1 + 2 * KIR_METRIC_PAD;
    for (int t = 0; t < KIR_MT_KINDS; t++) {
        free(m->tab[a][t]);
        m->tab[a][t] = malloc(sizeof(double) * (size_t)len);
        if (!m->tab[a][t]) {
            m->len[a] = 0;
            return -1;
        }
        for (int64_t g = 0; g < len; g++) m->tab[a][t][g] = NAN;
    }
    m->len[a] = len;
    return 0;
}

void kir_metric_seal(kir_metric *m)
{
    XXH64_state_t *st = XXH64_createState();
    if (!st) {
        m->hash = 0;
        return;
    }
    XXH64_reset(st, 0x6d657472);
    for (int a = 0; a < 3; a++) {
        XXH64_update(st, &m->len[a], sizeof m->len[a]);
        for (int t = 0; t < KIR_MT_KINDS && m->len[a]; t++) XXH64_update(st, m->tab[a][t], sizeof(double) * (size_t)m->len[a]);
    }
    m->hash = XXH64_digest(st);
    XXH64_freeState(st);
}

kir_metric *kir_metric_ref(kir_metric *m)
{
    if (m) atomic_fetch_add(&m->refs, 1);
    return m;
}

void kir_metric_unref(kir_metric *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    for (int a = 0; a < 3; a++)
        for (int t = 0; t < KIR_MT_KINDS; t++) free(m->tab[a][t]);
    free(m);
}

double kir_metric_at(const kir_metric *m, int a, int t, int64_t g)
{
    if (!m || a < 0 || a > 2 || t < 0 || t >= KIR_MT_KINDS) return NAN;
    int64_t i = g + KIR_METRIC_PAD;
    return i >= 0 && i < m->len[a] ? m->tab[a][t][i] : NAN;
}
