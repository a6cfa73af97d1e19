/* See run_sampler.h. */
#include "run/run_sampler.h"

#include <errno.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kernel/blocked_reads.h"
#include "kernel/clock.h"

#define MAX_THREADS 256

struct blocked_set {
    struct specx_blocked_read r[MAX_THREADS];
    int n;
};

static bool was_blocked(const struct blocked_set *before, struct specx_blocked_read r)
{
    for (int i = 0; i < before->n; i++)
        if (before->r[i].tid == r.tid && before->r[i].fd == r.fd &&
            before->r[i].ino == r.ino && before->r[i].off == r.off)
            return true;
    return false;
}

/* Folds one sample taken ELAPSED after the last into the view; FRESH[i]: now->r[i] is new. */
static void count_sample(struct outside_view *v, const struct blocked_set *before,
                         const struct blocked_set *now, uint64_t elapsed, bool *fresh)
{
    v->samples++;
    for (int i = 0; i < now->n; i++) {
        fresh[i] = !was_blocked(before, now->r[i]);
        if (fresh[i])
            v->blocked_reads++;
        v->blocked_ns += elapsed;
    }
}

static void wait_until(const struct run_sampler *s, const struct timespec *next)
{
    if (s->hooks) {
        s->hooks->wait_until(s->hooks->ctx, next);
        return;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR)
        ;
}

static void *sample(void *arg)
{
    struct run_sampler *s = arg;
    /* The sampler must not take CPU time from the command it watches. */
    setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    struct blocked_set sets[2] = { { .n = 0 }, { .n = 0 } };
    struct blocked_set *before = &sets[0], *now = &sets[1];
    uint64_t last = specx_now_ns();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        next.tv_nsec += (long)RUN_SAMPLE_PERIOD_NS;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        /* A late sample (a busy machine, or a supervisor that made a copy) is not followed
         * by a burst of others: the next is a period away. */
        struct timespec t_now;
        clock_gettime(CLOCK_MONOTONIC, &t_now);
        if (t_now.tv_sec > next.tv_sec ||
            (t_now.tv_sec == next.tv_sec && t_now.tv_nsec > next.tv_nsec))
            next = t_now;
        wait_until(s, &next);
        int n = specx_blocked_reads(s->pid, now->r, MAX_THREADS);
        if (n < 0)
            break; /* the command is gone */
        now->n = n;
        uint64_t t = specx_now_ns();
        bool fresh[MAX_THREADS];
        pthread_mutex_lock(&s->lock);
        count_sample(&s->view, before, now, t - last, fresh);
        pthread_mutex_unlock(&s->lock);
        if (s->hooks)
            s->hooks->sampled(s->hooks->ctx, now->r, fresh, now->n);
        last = t;
        struct blocked_set *swap = before;
        before = now;
        now = swap;
    }
    if (s->hooks)
        s->hooks->ended(s->hooks->ctx);
    return NULL;
}

bool run_sampler_start(struct run_sampler *s, pid_t pid, const struct sampler_hooks *hooks)
{
    *s = (struct run_sampler){ .pid = pid, .hooks = hooks, .lock = PTHREAD_MUTEX_INITIALIZER,
                               .view = { .sampled = true } };
    return pthread_create(&s->thread, NULL, sample, s) == 0;
}

struct outside_view run_sampler_stop(struct run_sampler *s)
{
    __atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    if (pthread_timedjoin_np(s->thread, NULL, &deadline) != 0)
        pthread_detach(s->thread);
    pthread_mutex_lock(&s->lock);
    struct outside_view v = s->view;
    pthread_mutex_unlock(&s->lock);
    return v;
}
