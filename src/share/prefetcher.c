/* See prefetcher.h. */
#include "prefetcher.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ioprio.h"
#include "memory.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct share_prefetch_request wanted;
static bool requested;
static struct share_prefetch_done done;
static bool done_ready;

static uint64_t prefetch(const struct share_prefetch_request *r)
{
    uint64_t need = share_memory_swapped(r->job), room = share_memory_room(r->room_of);
    for (size_t i = 0; i < r->nevict && room < need; i++) {
        share_memory_release(r->evict[i], MADV_PAGEOUT, need - room); /* no more than lacks */
        room = share_memory_room(r->room_of);
    }
    return share_memory_prefetch(r->job, need < room ? need : room);
}

static void *run(void *arg)
{
    (void)arg;
    specx_ioprio_set(0, IOPRIO_CLASS_IDLE, 0);
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!requested)
            pthread_cond_wait(&wake, &lock);
        struct share_prefetch_request r = wanted;
        requested = false;
        pthread_mutex_unlock(&lock);
        uint64_t t0 = specx_now_ns();
        uint64_t bytes = prefetch(&r);
        pthread_mutex_lock(&lock);
        done = (struct share_prefetch_done){ r.job, bytes, specx_now_ns() - t0 };
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
