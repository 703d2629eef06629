/* test_thread_choice.c — the default threads' rule (backends/host/thread_choice.h) decides from
 * the step times it is handed: made-up costs here, so the decision is checked without a clock.
 * A cost model: a step on one thread takes `one`, on all threads `all`; the rule must run the
 * cheaper one after its calibration, measure again when the chosen mode's time drifts (the load
 * changed) or after TC_RECHECK steps, and do nothing when not active (--threads N forced). */
#include "testutil.h"
#include "thread_choice.h"

/* Steps n times under costs one / all; returns how many of those steps ran on one thread. */
static int run(thread_choice *tc, int n, double one, double all)
{
    int serial = 0;
    for (int i = 0; i < n; i++) {
        int s = thread_choice_begin(tc);
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

static void calibration_length(void)
{
    /* long steps: the warm-up step on all threads, then TC_ROUNDS on each mode alternately */
    thread_choice tc;
    thread_choice_init(&tc, 1);
    assert_int_equal(run(&tc, TC_WARMUP + 2 * TC_ROUNDS, 1.0, 2.0), TC_ROUNDS);
    assert_int_equal(tc.calibrations, 1);
    assert_int_equal(tc.calibrating, 0);
    /* short steps: as many pairs as make TC_BUDGET_S (1 ms a pair: 20 pairs at 0.02 s, or one
       more where the sum of the times rounds below it) */
    thread_choice_init(&tc, 1);
    int pairs = (int)(TC_BUDGET_S / 1e-3 + 0.5);
    assert_in_range(calibrate(&tc, 0.4e-3, 0.6e-3), TC_WARMUP + 2 * pairs, TC_WARMUP + 2 * pairs + 2);
    /* very short ones: at most TC_MAX_ROUNDS of each */
    thread_choice_init(&tc, 1);
    assert_int_equal(calibrate(&tc, 1e-6, 2e-6), TC_WARMUP + 2 * TC_MAX_ROUNDS);
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
    run(&tc, TC_WARMUP + 2 * TC_ROUNDS, 1.0, 1.0);
    assert_int_equal(tc.chosen_serial, 0);
}

static void one_stall_does_not_decide(void **state)
{
    (void)state;
    /* one descheduled step on all threads (100x) does not decide: the slowest sixth is left out */
    thread_choice tc;
    thread_choice_init(&tc, 1);
    for (int i = 0; i < TC_WARMUP + 2 * TC_ROUNDS; i++) {
        int s = thread_choice_begin(&tc);
        thread_choice_end(&tc, s ? 2.0 : i == TC_WARMUP + 1 ? 100.0 : 1.0);
    }
    assert_int_equal(tc.chosen_serial, 0);
    /* stalls that recur (every other step on all threads) do: they are what the run would pay */
    thread_choice_init(&tc, 1);
    for (int i = 0; i < TC_WARMUP + 2 * TC_ROUNDS; i++) {
        int s = thread_choice_begin(&tc);
        thread_choice_end(&tc, s ? 2.0 : i % 4 == 2 ? 100.0 : 1.0);
    }
    assert_int_equal(tc.chosen_serial, 1);
}

static void load_change_measures_again(void **state)
{
    (void)state;
    thread_choice tc;
    thread_choice_init(&tc, 1);
    run(&tc, TC_WARMUP + 2 * TC_ROUNDS, 2.0, 1.0); /* quiet: all threads */
    assert_int_equal(tc.chosen_serial, 0);
    /* a busy process takes a core: all threads now 3.5 a step, one thread 2.0; the drift is seen
       once TC_MIN_GAP steps have passed, and the next calibration picks one thread */
    int serial = run(&tc, TC_MIN_GAP, 2.0, 3.5);
    assert_int_equal(serial, 0);
    assert_true(tc.calibrating);
    calibrate(&tc, 2.0, 3.5);
    assert_int_equal(tc.calibrations, 2);
    assert_int_equal(tc.chosen_serial, 1);
    /* the busy process leaves: one thread's time does not change, the periodic check finds all
       threads faster again within TC_RECHECK steps */
    assert_int_equal(run(&tc, TC_RECHECK, 2.0, 1.0), TC_RECHECK);
    assert_true(tc.calibrating);
    calibrate(&tc, 2.0, 1.0);
    assert_int_equal(tc.calibrations, 3);
    assert_int_equal(tc.chosen_serial, 0);
    /* small jitter within TC_DRIFT does not measure again before TC_RECHECK */
    run(&tc, TC_RECHECK / 2, 2.0, 1.1);
    assert_int_equal(tc.calibrations, 3);
}

static void inactive_when_forced(void **state)
{
    (void)state;
    thread_choice tc;
    thread_choice_init(&tc, 0); /* --threads N */
    assert_int_equal(run(&tc, 1000, 1.0, 5.0), 0);
    assert_int_equal(tc.calibrations, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keeps_the_faster_mode),
        cmocka_unit_test(one_stall_does_not_decide),
        cmocka_unit_test(load_change_measures_again),
        cmocka_unit_test(inactive_when_forced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
