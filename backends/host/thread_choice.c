/* thread_choice.c — the decision whether a sim's default threads pay (see thread_choice.h).
 *
 * Why measured, not a rule of cells per thread: what a second thread costs depends on the
 * machine's load more than on the mesh. Quiet, rk4 on 103² (2000 steps) took 72 ms on the
 * default 2 threads against 63 ms on one (a stage of ~10 µs pays a wake-up and a barrier, and the
 * serial ghost fills and checks between stages leave the worker spinning or asleep); with one busy
 * process on the second core the default was 1.75x slower than one thread. Large meshes gain
 * nearly 2x from the second thread. A calibration of a few steps costs at most those steps' gap
 * between the modes and sees the load as it is. */
#include "thread_choice.h"
#include <string.h>

static void sort(double *s, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n <= 64 */
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
}

static double median(const double *v, int n)
{
    double s[TC_MAX_ROUNDS > TC_WINDOW ? TC_MAX_ROUNDS : TC_WINDOW];
    memcpy(s, v, sizeof *v * (size_t)n);
    sort(s, n);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* The mean without the slowest sixth (at least the one slowest): what a run of such steps costs,
 * stalls that recur included, but not one stray descheduling. */
static double trimmed_mean(const double *v, int n)
{
    double s[TC_MAX_ROUNDS], sum = 0;
    memcpy(s, v, sizeof *v * (size_t)n);
    sort(s, n);
    int keep = n - (n / 6 > 1 ? n / 6 : 1);
    for (int i = 0; i < keep; i++) sum += s[i];
    return sum / keep;
}

static void start_calibration(thread_choice *tc)
{
    tc->calibrating = 1;
    tc->cal_step = 0;
    tc->cal_seconds = 0;
    tc->cal_total = 0;
    tc->n_one = tc->n_all = 0;
    tc->n_window = 0;
}

void thread_choice_init(thread_choice *tc, int active)
{
    memset(tc, 0, sizeof *tc);
    tc->active = active;
    if (active) start_calibration(tc);
}

int thread_choice_begin(thread_choice *tc, int *park)
{
    int was = tc->serial;
    if (!tc->active) tc->serial = 0;
    else if (!tc->calibrating) tc->serial = tc->chosen_serial;
    else { /* the warm-up steps on all threads, then blocks of TC_BLOCK: one, all, one, ... */
        int k = tc->cal_step - TC_WARMUP;
        tc->serial = k >= 0 && k / TC_BLOCK % 2 == 0;
    }
    if (park) *park = tc->serial && !was;
    return tc->serial;
}

/* The end of a calibration step: counted unless it is a warm-up step or a block's first. */
static void calibration_step(thread_choice *tc, double seconds)
{
    int k = tc->cal_step++ - TC_WARMUP;
    tc->cal_total += seconds;
    if (k >= 0 && k % TC_BLOCK != 0) {
        if (tc->serial) tc->t_one[tc->n_one++] = seconds;
        else tc->t_all[tc->n_all++] = seconds;
        tc->cal_seconds += seconds;
    }
    if (k < 0 || k % (2 * TC_BLOCK) != 2 * TC_BLOCK - 1) return; /* decided after a pair of blocks */
    double one = trimmed_mean(tc->t_one, tc->n_one), all = trimmed_mean(tc->t_all, tc->n_all);
    int rounds = tc->n_one >= TC_ROUNDS && tc->n_all >= TC_ROUNDS;
    double m1 = median(tc->t_one, tc->n_one), ma = median(tc->t_all, tc->n_all);
    int clear = (m1 > TC_CLEAR * ma && one > all) || (ma > TC_CLEAR * m1 && all > one); /* no need to go on */
    int enough = rounds && (clear || tc->cal_seconds >= TC_BUDGET_S);
    if (!enough && tc->n_all + TC_BLOCK - 1 <= TC_MAX_ROUNDS) return;
    tc->calibrating = 0;
    tc->chosen_serial = one < all;
    /* the drift's base */
    tc->chosen_median = tc->chosen_serial ? median(tc->t_one, tc->n_one) : median(tc->t_all, tc->n_all);
    tc->calibrations++;
    tc->steps_since = 0;
    tc->seconds_since = 0;
    tc->n_window = 0;
}

void thread_choice_end(thread_choice *tc, double seconds)
{
    if (!tc->active) return;
    if (tc->calibrating) {
        calibration_step(tc, seconds);
        return;
    }
    tc->steps_since++;
    tc->seconds_since += seconds;
    tc->window[tc->n_window++ % TC_WINDOW] = seconds;
    if (tc->seconds_since < TC_SHARE * tc->cal_total) return; /* calibrating costs 1/TC_SHARE at most */
    if (tc->steps_since >= TC_RECHECK) {
        start_calibration(tc);
        return;
    }
    if (tc->n_window < TC_WINDOW || tc->steps_since < TC_MIN_GAP) return;
    double m = median(tc->window, TC_WINDOW);
    if (m > tc->chosen_median * TC_DRIFT || m * TC_DRIFT < tc->chosen_median) start_calibration(tc);
}
