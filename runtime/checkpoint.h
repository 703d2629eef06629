/* checkpoint.h — restarts: the state of a run in one file, and a start from a --dump.
 *
 * A checkpoint holds every field's interior values (as doubles: exact in either precision), the
 * time and the step count bit for bit, the seed of rand(), the precision, the run's dt and param
 * values, the grid, and a fingerprint of the problem (checkpoint_fingerprint). It is written to a temporary name in its
 * folder, fsync'd, renamed into place and the folder fsync'd, so a crash leaves the previous
 * checkpoint or the new one, never half of one. A resumed run takes the same steps as one that was
 * never stopped (the driver does not stop to write a checkpoint: checkpoint_due), so it ends with
 * the same bits.
 *
 * File layout (little-endian, as the host writes it): "pdejit checkpoint\n" (18 bytes), a fixed
 * header (version, dim, n, length, origin, n_fields, single, t, steps, seed, fingerprint), from
 * format 2 on the run's dt and params (dt, n_params, then their values), the values (field by
 * field, x fastest), an XXH3-128 of everything before it. Format 1 files (no dt, no params) are
 * still read. */
#ifndef PJ_CHECKPOINT_H
#define PJ_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>
#include "engine.h"

/* The name of the checkpoint in a run's output folder. */
#define CHECKPOINT_NAME "checkpoint.pjc"

/* A hash of what a resumed run must share with the run that wrote the checkpoint: the dimension,
 * the scheme, the fields (names, order), the params (names), the stage and boundary kernels
 * (their canonical IR hashes: the equations, funcs, fluxes, consts), the boundary kinds and
 * periodic axes. Not the grid (checked apart, with its own message). */
void checkpoint_fingerprint(const pj_program *p, uint8_t out[16]);

/* Before the first step of a run whose output folder dir exists: removes the temporary files a
 * run killed while writing a checkpoint left there (regular files named .CHECKPOINT_NAME.XXXXXX,
 * the writer's mkstemp pattern: never taken for a checkpoint, never anything else), then, when
 * `writes` (the run writes checkpoints), checks that dir/CHECKPOINT_NAME can be written as
 * checkpoint_write writes it: a temporary file made in dir and removed, and CHECKPOINT_NAME not a
 * folder. *removed: how many temporaries were removed. 0, or -1 with "cannot write the checkpoint
 * DIR/checkpoint.pjc: REASON". */
int checkpoint_prepare(const char *dir, int writes, int *removed, char *err, size_t err_len);

/* Writes e's state to dir/CHECKPOINT_NAME atomically, with the run's dt and params. 0, or -1 with
 * a message. */
int checkpoint_write(engine *e, const char *dir, uint64_t seed, int single, double dt, char *err, size_t err_len);

/* Reads the checkpoint at path into e (fields, time, step count). Refused (-1, nothing changed)
 * when it is not a regular file or not a checkpoint, is of a newer format, is damaged (its length
 * and checksum are checked before its header is believed), was written on another grid, by another
 * problem, in another precision, with another seed or other param values (e's, as --set made them);
 * the message starts with the path. *dt (when dt is not NULL): the dt of the run that wrote it (NaN
 * for a format 1 checkpoint, which has none): the caller compares it with its own. */
int checkpoint_read(engine *e, const char *path, uint64_t seed, int single, double *dt, char *err, size_t err_len);

/* Sets e's fields from a CSV of the --dump format (writers_csv) of the same grid: the columns
 * named after fields set them, the others keep their initial values. -1 with a message when the
 * file cannot be read, its header is not `x[,y[,z]],NAME...` with known field names, or its rows
 * are not the cells of this grid (count and centres). */
int checkpoint_init_from_csv(engine *e, const char *path, char *err, size_t err_len);

/* Whether a checkpoint is due at time t: the first step boundary at or after each multiple of
 * `every` after `last` (the time of the last one, or of the start). */
int checkpoint_due(double every, double last, double t);

#endif
