/* decomp_engine.h — between engine.c and the decomposed engine (decomp_engine.c), nothing else
 * includes it.
 *
 * An engine dispatches every call to a table: a back end's own backend_ops, or, in a run over
 * MPI (engine_options.decomp), decomp_engine_ops, a table wrapping the back end's: the back end
 * simulates this process's block, and the wrapper makes the blocks one simulation of the whole
 * mesh (collective creation and hot swap, fields gathered and scattered through rank 0, failures,
 * flags and monitors agreed over every process).
 *
 * engine_procs is the engine's other table: what its processes do together (engine_rank,
 * engine_agree, ... in engine.h). engine.c has the one-process table (rank 0 of 1, nothing to
 * exchange), decomp_engine.c the decomposition's. */
#ifndef PJ_DECOMP_ENGINE_H
#define PJ_DECOMP_ENGINE_H
#include "engine.h"

/* The processes of an engine; impl is the engine's (its table's simulation). Every member is
 * engine.h's function of the same name, without the engine. */
typedef struct engine_procs {
    int (*rank)(const void *impl);
    int (*processes)(const void *impl);
    const grid_block *(*block)(const void *impl);  /* NULL: the whole mesh */
    const grid_block *(*blocks)(const void *impl); /* NULL: the whole mesh */
    int (*agree)(void *impl, int failed, char *err, size_t len);
    void (*bcast)(void *impl, void *data, size_t n);
    int (*any)(void *impl, int flag);
} engine_procs;

/* The wrapper's tables. decomp_engine_ops has no create (decomp_engine_create takes the table it
 * wraps), no emit or explain (they need no simulation: the back end's own), and neither name nor
 * capabilities: the engine answers with the back end's. */
extern const backend_ops decomp_engine_ops;
extern const engine_procs decomp_engine_procs;

/* Back end be's simulation of this process's block of p, in o->decomp (not NULL), behind the
 * wrapper: collective, every process calls it; NULL on every process, with the message of the
 * process that failed, when one fails. */
void *decomp_engine_create(const backend_ops *be, const pj_program *p, const engine_options *o, char *err,
                           size_t len);

#endif
