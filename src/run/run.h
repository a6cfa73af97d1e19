/* `specx run`, built into the specx command rather than exec'ed as a component: its start-up
 * is part of every run it measures (one exec less is about 1 ms per run). */
#ifndef SPECX_CLI_RUN_H
#define SPECX_CLI_RUN_H

/* argv[0] is the command's name ("run"); returns the exit status, or does not return when
 * it ends like a COMMAND killed by a signal. */
int specx_run_main(int argc, char **argv);

#endif
