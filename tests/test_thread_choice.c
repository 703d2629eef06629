/* test_thread_choice.c — the default threads' rule (backends/host/thread_choice.h) decides from
 * the step times it is handed: made-up costs here, so the decision is checked without a clock.
 * A cost model: a step on one thread takes `one`, on all threads `all`; the rule must run the
 * cheaper one after its calibration, measure again when the chosen mode's time drifts (the load
 * changed) or after TC_RECHECK steps, and do nothing when not active (--threads N forced). */
#include <math.h>
#include <stdlib.h>
#include "engine.h"
#include "solve.h"
#include "testutil.h"
#include "thread_choice.h"

/* Steps n times under costs one / all; returns how many of those steps ran on one thread. */
static int run(thread_choice *tc, int n, double one, double all)
{
    int serial = 0;
    for (int i = 0; i < n; i++) {
        int s = thread_choice_begin(tc, NULL);
        serial += s;
        thread_choice_end(tc, s ? one : all);
    }
    return serial;
}

/* Steps until the calibration under way ends; returns the steps it took. */
static int calibrate(thread_choice *tc, double one, double all)
{
    int n = 0;
    while (tc->calibrating && n < 10000) {
        run(tc, 1, one, all);
        n++;
    }
    assert_false(tc->calibrating);
    return n;
}

/* The steps of a calibration of `pairs` pairs of blocks (one thread, then all). */
static int cal_steps(int pairs) { return TC_WARMUP + 2 * TC_BLOCK * pairs; }

/* Pairs of blocks until each mode has `rounds` counted steps (a block's first is not counted). */
static int pairs_for(int rounds) { return (rounds + TC_BLOCK - 2) / (TC_BLOCK - 1); }

static void calibration_length(void)
{
    /* long steps: the warm-up step on all threads, then blocks of TC_BLOCK on each mode in turn
       until each has TC_ROUNDS counted steps */
    thread_choice tc;
    thread_choice_init(&tc, 1);
    int pairs = pairs_for(TC_ROUNDS);
    assert_int_equal(run(&tc, cal_steps(pairs), 1.0, 2.0), pairs * TC_BLOCK);
    assert_int_equal(tc.calibrations, 1);
    assert_int_equal(tc.calibrating, 0);
    assert_int_equal(tc.n_one, pairs * (TC_BLOCK - 1));
    /* short steps: as many pairs as make TC_BUDGET_S of counted steps (1 ms a counted pair of
       steps; one pair more where the sum rounds below it) */
    thread_choice_init(&tc, 1);
    pairs = (int)ceil(TC_BUDGET_S / 1e-3 / (TC_BLOCK - 1) - 1e-9);
    assert_in_range(calibrate(&tc, 0.45e-3, 0.55e-3), cal_steps(pairs), cal_steps(pairs + 1));
    /* very short ones: at most TC_MAX_ROUNDS counted steps of each */
    thread_choice_init(&tc, 1);
    assert_int_equal(calibrate(&tc, 1e-6, 1.2e-6), cal_steps(TC_MAX_ROUNDS / (TC_BLOCK - 1)));
    assert_true(tc.n_one <= TC_MAX_ROUNDS && tc.n_one > TC_MAX_ROUNDS - TC_BLOCK);
    /* a clear case (one mode's median TC_CLEAR times the other's or more) ends once each mode has
       TC_ROUNDS, short steps or not, either way */
    for (int all_faster = 0; all_faster < 2; all_faster++) {
        double fast = 1e-6, slow = 1.6e-6 * TC_CLEAR / 1.5;
        thread_choice_init(&tc, 1);
        assert_int_equal(calibrate(&tc, all_faster ? slow : fast, all_faster ? fast : slow),
                         cal_steps(pairs_for(TC_ROUNDS)));
        assert_int_equal(tc.chosen_serial, !all_faster);
    }
}

static void keeps_the_faster_mode(void **state)
{
    (void)state;
    calibration_length();
    thread_choice tc;
    /* small mesh: one thread 63 us a step, two 72 us: one thread from then on */
    thread_choice_init(&tc, 1);
    calibrate(&tc, 63e-6, 72e-6);
    assert_int_equal(tc.chosen_serial, 1);
    assert_int_equal(run(&tc, 100, 63e-6, 72e-6), 100);
    /* large mesh: two threads nearly twice as fast: all threads */
    thread_choice_init(&tc, 1);
    calibrate(&tc, 1.6e-3, 0.85e-3);
    assert_int_equal(tc.chosen_serial, 0);
    assert_int_equal(run(&tc, 100, 1.6e-3, 0.85e-3), 0);
    /* a tie keeps all threads */
    thread_choice_init(&tc, 1);
    calibrate(&tc, 1.0, 1.0);
    assert_int_equal(tc.chosen_serial, 0);
}

static void switch_steps_do_not_count(void **state)
{
    (void)state;
    /* the first step of each block pays the switch: made 100x here (a worker spinning through the
       first serial step, or waking for the first parallel one); the decision is the steady
       steps' (one thread 1.0, all 1.2: one thread), whichever mode pays the switch */
    for (int slow = 0; slow < 2; slow++) {
        thread_choice tc;
        thread_choice_init(&tc, 1);
        int prev = 0, parks = 0, switches = 0;
        while (tc.calibrating) {
            int park, s = thread_choice_begin(&tc, &park);
            parks += park;
            switches += s && !prev;
            assert_int_equal(park, s && !prev); /* parked exactly where one thread follows all */
            double cost = s ? 1.0 : 1.2;
            if (s != prev && s == !slow) cost *= 100;
            thread_choice_end(&tc, cost);
            prev = s;
        }
        assert_int_equal(tc.chosen_serial, 1);
        assert_int_equal(parks, switches);
        assert_int_equal(parks, pairs_for(TC_ROUNDS));
    }
    /* a step chosen on one thread after a calibration that ended on all threads parks them */
    thread_choice tc;
    thread_choice_init(&tc, 1);
    calibrate(&tc, 1.0, 2.0);
    int park;
    assert_int_equal(thread_choice_begin(&tc, &park), 1);
    assert_int_equal(park, 1);
    thread_choice_end(&tc, 1.0);
    assert_int_equal(thread_choice_begin(&tc, &park), 1);
    assert_int_equal(park, 0);
}

static void one_stall_does_not_decide(void **state)
{
    (void)state;
    /* one descheduled counted step on all threads (100x) does not decide: the slowest sixth is
       left out */
    thread_choice tc;
    thread_choice_init(&tc, 1);
    int stalled = 0;
    while (tc.calibrating) {
        int s = thread_choice_begin(&tc, NULL);
        int counted = tc.cal_step >= TC_WARMUP && (tc.cal_step - TC_WARMUP) % TC_BLOCK != 0;
        double cost = s ? 2.0 : 1.0;
        if (!s && counted && !stalled) cost = 100.0, stalled = 1;
        thread_choice_end(&tc, cost);
    }
    assert_true(stalled);
    assert_int_equal(tc.chosen_serial, 0);
    /* stalls that recur (every other step on all threads) do: they are what the run would pay */
    thread_choice_init(&tc, 1);
    for (int i = 0; tc.calibrating; i++) {
        int s = thread_choice_begin(&tc, NULL);
        thread_choice_end(&tc, s ? 2.0 : i % 2 ? 100.0 : 1.0);
    }
    assert_int_equal(tc.chosen_serial, 1);
}

/* Steps under costs one / all until a calibration starts; returns the steps, at most n. */
static int until_calibrating(thread_choice *tc, int n, double one, double all)
{
    int i = 0;
    while (!tc->calibrating && i < n) {
        run(tc, 1, one, all);
        i++;
    }
    return i;
}

static void load_change_measures_again(void **state)
{
    (void)state;
    thread_choice tc;
    thread_choice_init(&tc, 1);
    calibrate(&tc, 2.0, 1.0); /* quiet: all threads */
    assert_int_equal(tc.chosen_serial, 0);
    /* a busy process takes a core: all threads now 3.5 a step, one thread 2.0; the drift is seen
       once TC_MIN_GAP steps and TC_SHARE times the calibration's seconds have passed, and the next
       calibration picks one thread */
    double cal = tc.cal_total;
    int gap = (int)ceil(TC_SHARE * cal / 3.5);
    if (gap < TC_MIN_GAP) gap = TC_MIN_GAP;
    assert_in_range(until_calibrating(&tc, 10 * TC_RECHECK, 2.0, 3.5), gap, gap + 1); /* + 1: rounding */
    calibrate(&tc, 2.0, 3.5);
    assert_int_equal(tc.calibrations, 2);
    assert_int_equal(tc.chosen_serial, 1);
    /* the busy process leaves: one thread's time does not change, the periodic check finds all
       threads faster again after TC_RECHECK steps (or TC_SHARE times the calibration's seconds) */
    gap = (int)ceil(TC_SHARE * tc.cal_total / 2.0);
    if (gap < TC_RECHECK) gap = TC_RECHECK;
    assert_in_range(until_calibrating(&tc, 10 * TC_RECHECK, 2.0, 1.0), gap, gap + 1);
    calibrate(&tc, 2.0, 1.0);
    assert_int_equal(tc.calibrations, 3);
    assert_int_equal(tc.chosen_serial, 0);
    /* small jitter within TC_DRIFT does not measure again before TC_RECHECK */
    run(&tc, TC_RECHECK / 2, 2.0, 1.1);
    assert_int_equal(tc.calibrations, 3);
}

static void short_steps_calibrate_seldom(void **state)
{
    (void)state;
    /* 15 us steps (64², rk4): a calibration of about 170 steps must not come back every
       TC_RECHECK steps, only once the steps since took TC_SHARE times its seconds */
    thread_choice tc;
    thread_choice_init(&tc, 1);
    calibrate(&tc, 15e-6, 16e-6);
    assert_int_equal(tc.chosen_serial, 1);
    int gap = (int)ceil(TC_SHARE * tc.cal_total / 15e-6);
    assert_true(gap > TC_RECHECK);
    assert_in_range(until_calibrating(&tc, 100 * TC_RECHECK, 15e-6, 16e-6), gap, gap + 1);
}

static void inactive_when_forced(void **state)
{
    (void)state;
    thread_choice tc;
    thread_choice_init(&tc, 0); /* --threads N */
    assert_int_equal(run(&tc, 1000, 1.0, 5.0), 0);
    assert_int_equal(tc.calibrations, 0);
}

/* The rule on a real run: Gray-Scott on 72² (above the cells a pool is used for), the cpu back
 * end's default threads (calibrating in blocks on one thread and on all, workers parked between,
 * monitors reduced on the mode chosen), against the interpreter on one thread: the same bits,
 * fields and monitors, through the calibration and after it. */
static void default_threads_keep_bits(void **state)
{
    (void)state;
    test_case c = {.name = "gs72.pde",
                   .text = "mesh grid(nx = 72, ny = 72, Lx = 2.5, Ly = 2.5)\n"
                           "param Du = 2e-5, Dv = 1e-5, F = 0.035, k = 0.065\n"
                           "field u = 1 - 0.5*(abs(x - 1.25) < 0.2 && abs(y - 1.25) < 0.2 ? 1 : 0)\n"
                           "field v = 0.25*(abs(x - 1.25) < 0.2 && abs(y - 1.25) < 0.2 ? 1 : 0) + 0.01*sin(20*x)*sin(20*y)\n"
                           "eq dt(u) = Du*lap(u) - u*v^2 + F*(1 - u)\n"
                           "eq dt(v) = Dv*lap(v) + u*v^2 - (F + k)*v\n"
                           "periodic x, y\n"
                           "time dt = 1, until = 1000, scheme = rk4\n"};
    char *text = case_with_monitors(&c), err[1024];
    pj_program *p = compile_text(text);
    engine_options one = {.threads = 1}, deflt = {.threads = 0};
    engine *ref = engine_create(engine_backend("interp"), p, &one, NULL, err, sizeof err);
    engine *e = ref ? engine_create(engine_backend("cpu"), p, &deflt, NULL, err, sizeof err) : NULL;
    if (!e) fail_msg("%s", err);
    if (engine_init(ref, err, sizeof err) < 0 || engine_init(e, err, sizeof err) < 0) fail_msg("%s", err);
    for (int round = 0; round < 4; round++) { /* 400 steps: a calibration's ~170 and the chosen mode */
        int equal = 0;
        assert_true(engines_monitors_agree(ref, e, 100, &equal) == 0);
        assert_int_equal(equal, 5);
        assert_true(engines_agree(ref, e, 0, "default threads") == 0);
    }
    engine_destroy(ref);
    engine_destroy(e);
    program_free(p);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keeps_the_faster_mode),
        cmocka_unit_test(switch_steps_do_not_count),
        cmocka_unit_test(one_stall_does_not_decide),
        cmocka_unit_test(short_steps_calibrate_seldom),
        cmocka_unit_test(load_change_measures_again),
        cmocka_unit_test(inactive_when_forced),
        cmocka_unit_test(default_threads_keep_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
