/* See prefetcher.h. */
#include "prefetcher.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "ioprio.h"
#include "memcg.h"
#include "memory.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct share_prefetch_request wanted;
static bool requested;
static struct share_prefetch_done done;
static bool done_ready;

/* Room is made from the frozen jobs in two steps. MADV_PAGEOUT over the pages a job maps, in
 * address order, from this thread alone: its dirty pages get neighbouring swap slots and come
 * back in large reads (left to the kernel's reclaim, which takes pages from every job at once,
 * a job's slots came in runs of 16 pages). Then reclaim from the job's own group: it waits for
 * those writes and takes what page tables do not reach — the swap cache the job holds (pages
 * read ahead around its faults, or prefetched and not touched in its turn). */
static void make_room(const struct share_job *j, uint64_t bytes)
{
    share_memory_release(j, MADV_PAGEOUT, bytes);
    specx_memcg_reclaim(&j->mem, bytes);
}

/* The job's memory first, then its files, as far as the room goes. */
static uint64_t prefetch(const struct share_prefetch_request *r, uint64_t *file_bytes)
{
    uint64_t anon = share_memory_swapped(r->job), room = share_memory_room(r->room_of);
    uint64_t files = r->files_charged_to ? share_files_missing(&r->job->files) : 0;
    uint64_t kept = r->turn != r->job ? share_memory_swapped(r->turn) : 0;
    for (size_t i = 0; i < r->nevict && room < kept + anon + files; i++) {
        make_room(r->evict[i], kept + anon + files - room);
        room = share_memory_room(r->room_of);
    }
    room = room > kept ? room - kept : 0;
    uint64_t bytes = share_memory_prefetch(r->job, anon < room ? anon : room);
    *file_bytes = files && room > bytes ?
        share_files_prefetch(&r->job->files, r->files_charged_to, room - bytes) : 0;
    return bytes + *file_bytes;
}

static void *run(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!requested)
            pthread_cond_wait(&wake, &lock);
        struct share_prefetch_request r = wanted;
        requested = false;
        pthread_mutex_unlock(&lock);
        /* The next job's pages are read in the idle class, behind the running job's faults.
         * The running job's own (a prefetch at the switch) are not: it would wait on them, and
         * mq-deadline serves the idle class only when nothing else is queued. */
        if (r.turn == r.job)
            specx_ioprio_set(0, IOPRIO_CLASS_BE, 4);
        else
            specx_ioprio_set(0, IOPRIO_CLASS_IDLE, 0);
        uint64_t t0 = specx_now_ns(), file_bytes;
        uint64_t bytes = prefetch(&r, &file_bytes);
        pthread_mutex_lock(&lock);
        done = (struct share_prefetch_done){ r.job, bytes, file_bytes, specx_now_ns() - t0 };
        done_ready = true;
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
    pthread_mutex_unlock(&lock);
    return ready;
}
