/* Durations and sizes on command lines, as every specx command spells them (unit-tested). */
#ifndef SPECX_UNITS_H
#define SPECX_UNITS_H

#include <stdbool.h>
#include <stdint.h>

/* A duration: a number with ms, s, m or h ("500ms", "2.5s"; a bare number is seconds). */
bool specx_parse_duration(const char *s, uint64_t *ns);

/* A size: a number of bytes with an optional K, M, G or T (powers of 1024: "512M", "1.5G"). */
bool specx_parse_size(const char *s, uint64_t *bytes);

/* A rate in bits per second: a number with kbit, mbit or gbit (powers of 1000, "100mbit",
 * "1.5gbit"), or bits. */
bool specx_parse_rate(const char *s, uint64_t *bps);

/* All are false on anything else, on zero and on overflow. */

#endif
