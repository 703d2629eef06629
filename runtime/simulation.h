/* simulation.h — the generic half of every back end's simulation: what the engine does alike
 * over any executor (engine.h's exec_ops) and its state (state.h).
 *
 *   clock      the state's t and step count, set from outside (a restart), the executor refreshed
 *   params     state_set_param (the one evaluator), the executor refreshed
 *   fields     buffer b in and out through the executor's copies, as doubles, x fastest
 *   views      buffer b where it lives, from the state's layout
 *   NaN/Inf    the executor's record and search, reported by state_nan_report
 *   steps      the stepper (state.h) over the executor's step operations
 *
 * The engine (engine.c) calls these for every back end; an executor's own entry points (sim.c,
 * cuda_backend.c) may call them too. Library code: never prints, never exits. */
#ifndef PJ_SIMULATION_H
#define PJ_SIMULATION_H
#include "engine.h"

/* An executor's simulation: its operations, its handle and its state. */
typedef struct simulation {
    const exec_ops *ops;
    void *x;
    sim_state *st;
} simulation;

/* One step of dt through the stepper (stepper_step), and n steps (stepper_step_n: a sweep
 * strategy takes several at once where it can), then the executor refreshed (its launch
 * arguments' clock). 0, or -1 with a message (st->steps says how far it got). */
int simulation_step(const simulation *m, double dt, char *err, size_t len);
int simulation_step_n(const simulation *m, double dt, int64_t n, char *err, size_t len);
/* A restart: time and step count. */
void simulation_set_clock(const simulation *m, double t, int64_t steps);
/* Param `name` set (state_set_param): 0, or -1 when the program has none of that name. */
int simulation_set_param(const simulation *m, const char *name, double value);
void simulation_set_params(const simulation *m, const double *values);
/* Buffer b's (slot * n_fields + field) interior values (x fastest) out as doubles, or in from
 * doubles. 0, or -1 with a message (no such buffer, or the executor's copy failed). */
int simulation_get_field(const simulation *m, int b, double *out, char *err, size_t len);
int simulation_set_field(const simulation *m, int b, const double *in, char *err, size_t len);
/* 1 when a stage stored a NaN/Inf since the last call, 0 when not, -1 with a message. */
int simulation_take_nonfinite(const simulation *m, char *err, size_t len);
/* The first non-finite value of slot 0 (fields in order, cells x fastest): 1 with r filled (r
 * may be NULL), 0 when every value is finite, -1 with a message. */
int simulation_check_finite(const simulation *m, sim_nan_report *r, char *err, size_t len);
/* Buffer b where it lives, without a copy (engine_view): 0, or -1 for no buffer b. */
int simulation_view(const simulation *m, int b, engine_view *v);
/* Waits for the executor's launches (nothing to wait for on the host). 0, or -1 with a message. */
int simulation_sync(const simulation *m, char *err, size_t len);

#endif
