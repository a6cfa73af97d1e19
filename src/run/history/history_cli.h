/* `specx history list|show|forget`: what specx run keeps of earlier runs (store.h), to see
 * and to remove. Built into the specx command, beside `specx run`. */
#ifndef SPECX_HISTORY_CLI_H
#define SPECX_HISTORY_CLI_H

/* argv[0] is the command's name ("history"); returns the exit status. */
int specx_history_main(int argc, char **argv);

#endif
