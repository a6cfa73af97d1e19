/* Which history a command's run belongs to (docs/design/history.md): its program, by the
 * executable's identity (device, inode, size, modification time: a rebuilt or upgraded
 * program starts afresh), and its key, the program with the arguments and the working
 * directory. A run replays the history of its key; where there is none, the latest history of
 * the same program with other arguments lends it its start-up reads. */
#ifndef SPECX_HISTORY_COMMAND_KEY_H
#define SPECX_HISTORY_COMMAND_KEY_H

#include <stddef.h>
#include <stdint.h>

#define COMMAND_KEY_SEED 0xcbf29ce484222325ull

/* FNV-1a over LEN bytes of BUF, from SEED (a running hash, or COMMAND_KEY_SEED): for keys and
 * for checksums against corruption (trust rests on the store's directory, not on this). */
uint64_t command_key_hash(const void *buf, size_t len, uint64_t seed);

struct command_key {
    uint64_t program, key;
};

/* The key of ARGV run in the working directory CWD: the executable as execvp would find it.
 * 0; -1 when it cannot be found (then the run has no history). */
int command_key_of(char *const argv[], const char *cwd, struct command_key *k);

#endif
