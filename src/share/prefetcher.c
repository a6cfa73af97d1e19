/* See prefetcher.h. */
#include "share/prefetcher.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "share/files.h"
#include "kernel/ioprio.h"
#include "kernel/memcg.h"
#include "share/memory.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* a request, or a collection */
static struct share_prefetch_request wanted;
static bool requested, working;
static struct share_prefetch_done done;
static bool done_ready;

/* Room is made from the frozen jobs in two steps. MADV_PAGEOUT over the pages a job maps, in
 * address order, from this thread alone: its dirty pages get neighbouring swap slots and come
 * back in large reads (left to the kernel's reclaim, which takes pages from every job at once,
 * a job's slots came in runs of 16 pages). Then, on v2, reclaim from the job's own group: it
 * waits for those writes and takes what page tables do not reach — the swap cache the job
 * holds (pages read ahead around its faults, or prefetched and not touched in its turn). v1
 * reclaims only by lowering the group's limit for a moment, and a job thawed in that moment
 * meets the OOM killer: there the kernel's own reclaim takes that swap cache when the group
 * is full (a frozen job's group may always swap: job.c). */
static void make_room(const struct share_job *j, uint64_t bytes)
{
    /* A chunk at a time, its writes waited for (by the reclaim, on v2) before the next: like the
     * reads (memory.h), so that the running job's faults wait behind one chunk at most. */
    for (uint64_t step; bytes > 0; bytes -= step) {
        step = bytes < SHARE_PREFETCH_CHUNK ? bytes : SHARE_PREFETCH_CHUNK;
        share_memory_release(j, MADV_PAGEOUT, step);
        if (j->mem.version != SPECX_CG_V1)
            specx_memcg_reclaim(&j->mem, step);
    }
}

/* The job's memory first, then its files, as far as the room goes. */
static void prefetch(const struct share_prefetch_request *r, struct share_prefetch_done *d)
{
    uint64_t anon = share_memory_swapped(r->job), room = share_memory_room(r->room_of);
    uint64_t files = r->files_charged_to ? share_files_missing(&r->job->files) : 0;
    uint64_t kept = r->turn != r->job ? share_memory_swapped(r->turn) : 0;
    for (size_t i = 0; i < r->nevict && room < kept + anon + files; i++) {
        make_room(r->evict[i], kept + anon + files - room);
        room = share_memory_room(r->room_of);
    }
    d->room_ns = specx_now_ns() - d->start_ns;
    room = room > kept ? room - kept : 0;
    uint64_t bytes = share_memory_prefetch(r->job, anon < room ? anon : room);
    d->file_bytes = files && room > bytes ?
        share_files_prefetch(&r->job->files, r->files_charged_to, room - bytes) : 0;
    d->bytes = bytes + d->file_bytes;
}

static void *run(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        /* The last one's figures must be collected before another can replace them. */
        while (!requested || done_ready)
            pthread_cond_wait(&wake, &lock);
        struct share_prefetch_request r = wanted;
        requested = false;
        working = true;
        pthread_mutex_unlock(&lock);
        /* The next job's pages are read in the idle class, behind the running job's faults.
         * The running job's own (a prefetch at the switch) are not: it would wait on them, and
         * mq-deadline serves the idle class only when nothing else is queued. */
        if (r.turn == r.job)
            specx_ioprio_set(0, IOPRIO_CLASS_BE, 4);
        else
            specx_ioprio_set(0, IOPRIO_CLASS_IDLE, 0);
        struct share_prefetch_done d = { .job = r.job, .start_ns = specx_now_ns() };
        prefetch(&r, &d);
        d.ns = specx_now_ns() - d.start_ns;
        pthread_mutex_lock(&lock);
        done = d;
        done_ready = true;
        working = false;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int share_prefetcher_start(void)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int err = pthread_create(&t, &attr, run, NULL);
    pthread_attr_destroy(&attr);
    return err ? -1 : 0;
}

void share_prefetcher_request(const struct share_prefetch_request *r)
{
    pthread_mutex_lock(&lock);
    wanted = *r;
    requested = true;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
}

bool share_prefetcher_collect(struct share_prefetch_done *out)
{
    pthread_mutex_lock(&lock);
    bool ready = done_ready;
    if (ready)
        *out = done;
    done_ready = false;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    return ready;
}

/* A prefetch smaller than this says too little about the device to measure B by. */
#define MEASURABLE_BYTES (1ull << 20)

double share_bandwidth_update(double bandwidth, const struct share_prefetch_done *d)
{
    if (d->bytes < MEASURABLE_BYTES || d->ns == 0)
        return bandwidth;
    double b = (double)d->bytes / ((double)d->ns / 1e9);
    /* The rate varied fivefold from one prefetch to the next in the benchmark (seeks between
     * scattered swap slots, writes to make room, the running job's own reads). A slower one
     * lowers the estimate at once, a faster one raises it halfway: a prefetch started late
     * leaves the next job faulting through its first second, one started early costs little,
     * since it never takes room the running job holds (share_memory_room). */
    return bandwidth <= 0 || b < bandwidth ? b : (bandwidth + b) / 2;
}

bool share_prefetcher_busy(void)
{
    pthread_mutex_lock(&lock);
    bool busy = requested || working || done_ready;
    pthread_mutex_unlock(&lock);
    return busy;
}
