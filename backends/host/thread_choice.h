/* thread_choice.h — whether the default threads pay: a sim whose thread count was not forced
 * (--threads N forces N) times its first steps on one thread and on all of them, alternately, and
 * runs on whichever was faster; it measures again when the chosen mode's steps drift from the
 * time it was chosen with (the machine's load changed).
 *
 * The rule (docs/performance.md, "Threads that pay"): after TC_WARMUP steps, the steps run in
 * blocks of TC_BLOCK on one thread and on all threads alternately; a block's first step, which
 * pays the switch (a worker still spinning from the last parallel step, or asleep and woken), is
 * not counted, and the sim parks the workers as a serial block begins (cpu_pool_park). Blocks go
 * on until each mode has at least TC_ROUNDS counted steps and the calibration's steps add up to
 * TC_BUDGET_S seconds (short steps on a busy machine: a scheduler's time slice must not decide),
 * or until one mode's median step is TC_CLEAR times the other's (a clear case: a second core that
 * halves a large mesh's step, or a busy one that stalls it), at most TC_MAX_ROUNDS each; the mode whose mean step time, without the slowest sixth of its
 * steps, is lower is kept (all threads on a tie). While running the chosen mode, the median of
 * its last TC_WINDOW steps is compared with the median it was chosen with: outside
 * [1/TC_DRIFT, TC_DRIFT] times that, the calibration is done again, and also after TC_RECHECK
 * steps (the load may have left a mode that did not slow down: one thread on the
 * free core); either only once at least TC_MIN_GAP steps, and TC_SHARE times the last
 * calibration's seconds, have passed since it (so that calibrating costs at most about 1/TC_SHARE
 * of the steps however short they are). The timing is the caller's (sim.c: the stage launches of a step); this module only
 * decides, so a test can hand it made-up times. */
#ifndef PJ_THREAD_CHOICE_H
#define PJ_THREAD_CHOICE_H

#define TC_WARMUP 1
#define TC_BLOCK 4
#define TC_ROUNDS 5
#define TC_MAX_ROUNDS 30
#define TC_BUDGET_S 0.02
#define TC_CLEAR 1.5
#define TC_WINDOW 16
#define TC_DRIFT 1.3
#define TC_MIN_GAP 256
#define TC_RECHECK 1024
#define TC_SHARE 25

typedef struct thread_choice {
    int active;              /* 0: not choosing (threads forced, or one thread only) */
    int calibrating;         /* 1 while calibrating */
    int cal_step;            /* steps of the calibration so far (warm-up included) */
    double cal_seconds;      /* their counted time */
    double cal_total;        /* the last calibration's seconds, every step of it */
    int serial;              /* the mode of the current step: 1 one thread, 0 all */
    int chosen_serial;       /* the decision of the last calibration */
    int calibrations;        /* how many were done */
    double t_one[TC_MAX_ROUNDS], t_all[TC_MAX_ROUNDS];
    int n_one, n_all;
    double chosen_median;    /* the median of the chosen mode's first TC_ROUNDS steps at the decision */
    double window[TC_WINDOW];
    int n_window;
    long steps_since;        /* steps since the last decision */
    double seconds_since;    /* and their seconds */
} thread_choice;

/* Starts choosing (active) or not. */
void thread_choice_init(thread_choice *tc, int active);
/* Before a step: 1 when it runs on one thread, 0 on all; *park (may be NULL): 1 when this step
   switches from all threads to one, so that the caller parks the idle workers. */
int thread_choice_begin(thread_choice *tc, int *park);
/* After it: the step's seconds (of the work that threads share). */
void thread_choice_end(thread_choice *tc, double seconds);

#endif
