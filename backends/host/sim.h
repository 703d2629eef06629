/* sim.h — a running simulation: fields with halos, boundary fill, the steppers, NaN checks.
 *
 * A sim owns the buffers of every slot of a pj_program (slot 0 = the state U) and runs the
 * program's stage kernels through a stage runner: the interpreter by default, compiled CPU
 * code once a back end installs its runners. Library code: never prints, never exits. */
#ifndef PJ_SIM_H
#define PJ_SIM_H
#include <stdint.h>
#include "program.h"
#include "state.h"

typedef struct sim sim;

/* The host executor's operations (engine.h): a sim is the handle of every call. */
extern const struct exec_ops sim_exec_ops;
/* The sim's state (state.h): the engine's generic half works on it (runtime/simulation.h). */
sim_state *sim_get_state(sim *s);

typedef struct sim_options {
    int single;           /* --precision single: buffers are float, kernels compute in float */
    int threads;          /* 0: all cores */
    const struct ghost_settings *ghosts; /* NULL: the program's conditions on every side (grid.h) */
    uint64_t seed;        /* rand() and randn(): the key of their generator (compiler/noise.h) */
    const struct grid_block *block; /* NULL: the whole mesh; else the block of it this sim holds
                                       (a decomposed run: runtime/decomp.h) */
} sim_options;

/* Runs kernel `stage` of the program (a pj_kernel_id: a stage's number, or a named kernel such
 * as PJ_KERNEL_JACOBIAN that sim_eval runs) over outermost indices [begin, end). */
typedef void (*sim_stage_runner)(void *ctx, pj_kernel_id stage, const kir_launch *L, int64_t begin, int64_t end);


sim *sim_create(const pj_program *p, const sim_options *opt, char *err, size_t err_len);
/* Whether p's buffers (every slot and field, halos included, in single or double) fit in the
 * host memory available (grid.h): 0, or -1 with "the problem needs ..." in err. sim_create makes
 * this check before it allocates; `pdejit check` makes it without allocating. */
int sim_memory_check(const pj_program *p, int single, char *err, size_t err_len);
void sim_destroy(sim *s);

/* Parameters: by name (returns -1 when there is none) and all at once. Params that depend on
 * others (param b = 2*a) are re-evaluated in order after a change. */
int sim_set_param(sim *s, const char *name, double value);
const double *sim_params(const sim *s);

/* Installs compiled code for the stages (NULL restores the interpreter). */
void sim_set_stage_runner(sim *s, sim_stage_runner run, void *ctx);

/* Initial values at t = 0 (the program's init kernel); resets t and the step count. */
void sim_init(sim *s);
/* One step of size dt (every stage of the scheme, boundaries filled before each stage). 0, or -1
 * when a ghost hook failed (sim_error says why; the sim takes no more steps). */
int sim_step(sim *s, double dt);
/* n steps of size dt: as n calls of sim_step give, bit for bit in slot 0 (the state), but
 * several steps per sweep over the state where temporal blocking applies and pays
 * (backends/host/tblock.c; the other slots then hold other values). 0, or -1 as sim_step. */
int sim_step_n(sim *s, double dt, int64_t n);
/* Temporal blocking: mode -1 never, 0 when it pays (the default: a thread's share of the state
 * exceeds 8 second-level caches, or the state the last-level cache), 1 whenever it applies; k
 * steps per sweep and bands of `rows` rows of the last axis (0: chosen by the cache's size).
 * sim_create takes them from $PDEJIT_TBLOCK (off, on, auto), $PDEJIT_TBLOCK_K and
 * $PDEJIT_TBLOCK_ROWS, the rows per kernel launch from $PDEJIT_TBLOCK_LAUNCH and the cells per
 * strip of a 2D launch from $PDEJIT_TBLOCK_STRIP (a number, or off). */
void sim_set_tblock(sim *s, int mode, int k, int rows);

/* Spatial blocking of a 3D stage (sim.c, "y tiles"): each thread's run of z-planes is walked in
 * tiles of `rows` rows of y (every plane of the run for the first tile, then the next), so that
 * the planes a tile's stencil reads stay in the second-level cache; the threads' pieces then
 * hold at least 16H planes (fewer tile edges). Results are bit for bit those of whole planes.
 * rows -1: never; 0 (the default): when the planes a stencil reads exceed half of the
 * second-level cache, rows chosen by its size; > 0: always, with that many rows. Only with a
 * stage runner (the CPU back end) and at most 64 buffers (slots x fields). sim_create takes it from
 * $PDEJIT_TILE_Y (off, auto, ROWS). */
void sim_set_tiles(sim *s, int64_t rows);
/* The rows per y tile in effect (0: whole planes). */
int64_t sim_tile_rows(const sim *s);
/* The choice the first steps measured (sim.c, "measured choices"): -1 nothing to measure (no
 * stage runner, or neither the y tiles nor the row prefetch on by sim_create's own choice),
 * -2 still measuring, else bit 0 set: y tiles off, bit 1 set: row prefetch off. */
int sim_tuned_choice(const sim *s);
/* The steps a block of at most n steps would take in one sweep now: 0 when it would step one
 * at a time (blocking does not apply, is off or does not pay). */
int sim_tblock_steps(const sim *s, int64_t n);
/* 3D: the rows of y per tile of the next block (0: whole planes), its cells of x (*tile_x, 0:
   whole rows) and the candidate sizes it uses (tblock.c: measured on the first blocks in auto
   mode, the fastest kept; -1 while they are measured). */
int sim_tblock_tile(const sim *s, int *cand, int *tile_x);
/* Temporal blocking so far: the steps taken in blocked sweeps (0: none), and the last sweep's
 * steps (*k), 3D rows of y per tile (*tile_y, 0: whole planes) and cells of x (*tile_x, 0: whole
 * rows); the last sweep not cut short by the end of its block (an output, the run's end), where
 * there was one. */
int64_t sim_tblock_done(const sim *s, int *k, int64_t *tile_y, int64_t *tile_x);
/* Kernel `id` of the program (program.h: a stage, or a named kernel such as
 * PJ_KERNEL_RHS_IMPLICIT or PJ_KERNEL_JACOBIAN, which read slot 0) run once at time t (its read
 * slot's ghosts filled first), without advancing the time: what an implicit solver calls for
 * F(U) and its Jacobian. 0, or -1 when a ghost hook failed or the program has no such kernel. */
int sim_eval(sim *s, pj_kernel_id id, double t, double dt);
/* Sets the simulation's time and step count (an implicit solver advances them itself; a restart). */
void sim_set_clock(sim *s, double t, int64_t steps);
/* The buffers' layout (grid.h); buffer (slot, field) is sim_launch(s)->buf[slot * n_fields + field]. */
const struct grid_layout *sim_layout(const sim *s);
/* Leaves field f's ghost cells alone in sim_fill_ghosts (skip 1) or fills them again (0); fields
 * from 64 on are always filled. For pj_term, whose kernels read some fields from the caller's own
 * arrays, not from the sim's buffers (runtime/term.c). */
void sim_skip_fill(sim *s, int f, int skip);
/* The failure of a ghost hook, or NULL. */
const char *sim_error(const sim *s);
/* First non-finite value in the state, scanning fields in order, cells x fastest; returns 1
 * when found (report filled), 0 when all are finite. */
int sim_check_finite(const sim *s, sim_nan_report *report);

/* 1 when a stage stored a NaN or an infinity since the last call (the stage kernels record it
 * as they store, at no extra memory traffic), then clears the record. A 1 means: scan with
 * sim_check_finite to find where. */
int sim_take_nonfinite(sim *s);

double sim_time(const sim *s);
int64_t sim_steps(const sim *s);
int64_t sim_cells(const sim *s);
/* Threads a stage is split over (1 when the sim runs serially). */
int sim_threads(const sim *s);
/* The threads a step runs on now: 1 where the default threads were measured not to pay (sim.c,
 * thread_choice.h) and on meshes too small to split, else sim_threads. */
int sim_threads_in_use(const sim *s);
/* 1 when the default threads were measured not to pay, so that a step runs on one thread. */
int sim_threads_measured_slower(const sim *s);
const pj_program *sim_program(const sim *s);
/* The state it steps (state.h). */
sim_state *sim_state_of(sim *s);
/* One evaluation of a kernel over the interior, on the sim's threads, without a step: fills the
 * ghost cells of read_slot at time t (none when read_slot < 0), then runs `stage` of `run` (ctx)
 * over every cell with launch L, its t and dt set (L NULL: the sim's own launch; run NULL: then
 * the sim's stage runner, or the interpreter on k when none is installed, as a step would). Slots
 * are not swapped, the clock does not move. 0, or -1 when a ghost hook failed (sim_error).
 * For pj_term (runtime/term.c). */
int sim_run_kernel(sim *s, int read_slot, double t, double dt, sim_stage_runner run, void *ctx, int stage,
             const kir_kernel *k, kir_launch *L);
/* Copies field f's interior values (x fastest) into out, as doubles; f may also be
 * slot * n_fields + field, a field of another slot (sim_get_field and sim_set_field). */
void sim_get_field(const sim *s, int f, double *out);
/* Replaces field f's interior values from doubles (x fastest). */
void sim_set_field(sim *s, int f, const double *in);
/* The launch description for stage kernels (buffers of the current slots), for back ends. */
const kir_launch *sim_launch(sim *s);
/* Sets the cell spacing kernels see (sim_create takes it as the mesh's length / cells, which cannot
 * give every spacing exactly), for pj_term; the ghost fill of linear conditions keeps its own. */
void sim_set_spacing(sim *s, const double h[3]);
/* Overrides the choice sim_create made for kir_launch.prefetch (on: the state exceeds the
 * last-level cache, then measured against off in the first steps); for tests and benchmarks. */
void sim_set_prefetch(sim *s, int on);

/* The program's monitors at the current state and time: its KIR_REDUCE kernel (p->reduce) run
 * over the parts of the grid on the sim's threads (compiled code fn, or the interpreter when fn
 * is NULL), the parts combined in order (kir.h, so the result does not depend on the threads),
 * then integral times the cell volume, mean over the number of cells: values[i] for monitor i.
 * Fills slot 0's ghosts first (neighbours may be read). 0, or -1 when out of memory (values
 * NaN). Nothing to do (0) without monitors. */
int sim_reduce(sim *s, kir_cpu_fn fn, double *values);

/* Hot swap: runs p2's kernels from the next step on, the fields keeping their state (p2's initial
 * values are not used). p2 must have the same mesh, fields, params and scheme slots as the current
 * program, and no wider stencil than the ghost layers allocated; returns -1 with the reason
 * otherwise, and nothing changes. The caller installs p2's compiled stage runner (if any) and
 * keeps the old program alive while anything may still refer to it. */
int sim_replace_program(sim *s, const pj_program *p2, char *err, size_t err_len);

/* Fills the ghost cells of `slot` at time t (exposed for tests): per field, the axes in the plan's
 * order (grid.h: periodic ones last), each over the full extent of the other axes including their ghost layers (so the
 * last axis sets the corners). Periodic wraps, Neumann-0 mirrors, a linear condition
 * a*u + b*dn(u) = c (bc_kernel[side], evaluated on the boundary cells at time t, once when
 * constant) sets ghost m = (c - u_m*(a/2 - b/d)) / (a/2 + b/d), d = (2m-1)h, u_m the interior
 * cell mirrored about the face. A side with a hook in the plan (grid.h) is the hook's, called
 * after the other side of its axis; a failing hook leaves the sim failed (sim_error). The
 * exchanged sides of a block (grid.h) are left to the plan's exchange, called last. */
void sim_fill_ghosts(sim *s, int slot, double t);

#endif
