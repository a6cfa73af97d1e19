/* Writing JSON by hand, as every specx command's --json does: the one piece that needs care. */
#ifndef SPECX_JSON_H
#define SPECX_JSON_H

#include <stdio.h>

/* S as a JSON string: quoted, with quotes, backslashes and control characters escaped; null
 * if S is NULL. */
void specx_json_string(FILE *out, const char *s);

/* The stream a --json FILE goes to: standard output for "-", else FILE made anew. NULL with
 * errno if it cannot be. */
FILE *specx_json_open(const char *file);
/* Ends what specx_json_open gave: 0, or -1 with errno if anything written was lost. */
int specx_json_close(FILE *f);

/* ARGV (NULL-terminated) as a JSON array of strings. */
void specx_json_argv(FILE *out, char *const *argv);

#endif
