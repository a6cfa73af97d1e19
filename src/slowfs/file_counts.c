/* See file_counts.h. A chained hash table under one lock: only mounts that ask for the counts
 * pay for it, once per close and per write. */
#include "slowfs/file_counts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BUCKETS 4096

struct entry {
    ino_t ino;
    struct file_counts counts;
    struct entry *next;
};

static struct entry *buckets[BUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The entry of INO, made if absent (NULL if out of memory). Called with the lock held. */
static struct entry *entry_of(ino_t ino)
{
    struct entry **head = &buckets[(uint64_t)ino % BUCKETS];
    for (struct entry *e = *head; e; e = e->next)
        if (e->ino == ino)
            return e;
    struct entry *e = calloc(1, sizeof *e);
    if (e) {
        e->ino = ino;
        e->next = *head;
        *head = e;
    }
    return e;
}

void file_counts_flush(ino_t ino, bool foreign)
{
    pthread_mutex_lock(&lock);
    struct entry *e = entry_of(ino);
    if (e) {
        e->counts.flushes++;
        e->counts.foreign_flushes += foreign;
    }
    pthread_mutex_unlock(&lock);
}

void file_counts_write(ino_t ino)
{
    pthread_mutex_lock(&lock);
    struct entry *e = entry_of(ino);
    if (e)
        e->counts.writes++;
    pthread_mutex_unlock(&lock);
}

struct file_counts file_counts_of(ino_t ino)
{
    struct file_counts c = { 0 };
    pthread_mutex_lock(&lock);
    for (struct entry *e = buckets[(uint64_t)ino % BUCKETS]; e; e = e->next)
        if (e->ino == ino)
            c = e->counts;
    pthread_mutex_unlock(&lock);
    return c;
}

char *file_counts_json(ino_t ino)
{
    struct file_counts c = file_counts_of(ino);
    char *text = NULL;
    if (asprintf(&text, "{\"flushes\":%llu,\"foreign_flushes\":%llu,\"writes\":%llu}",
                 (unsigned long long)c.flushes, (unsigned long long)c.foreign_flushes,
                 (unsigned long long)c.writes) < 0)
        return NULL;
    return text;
}
