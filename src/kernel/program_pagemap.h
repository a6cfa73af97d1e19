/* The program's page table as its speculative process reads it (/proc/PROGRAM/pagemap, one
 * 64-bit entry per page): fast refork asks whether a page is present or swapped out
 * (lazy_fill.c), page-fault speculation whether the program has reached a chunk
 * (fault_speculation.c). One descriptor per copy, kept at the top of its descriptor table. */
#ifndef SPECX_PROGRAM_PAGEMAP_H
#define SPECX_PROGRAM_PAGEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SPECX_PAGEMAP_PRESENT (1ull << 63)
#define SPECX_PAGEMAP_SWAPPED (1ull << 62)

/* Opens PROGRAM's page table, once per copy (later calls only answer whether it is open).
 * Works before the sandbox (a copy it re-opens privately) and after (a read-only open). */
bool specx_pagemap_open(pid_t program);

/* Reads the entries of PAGES pages from page-aligned ADDR into ENTRIES; returns how many were
 * read (0 if the page table is not open or cannot be read). */
size_t specx_pagemap_read(uintptr_t addr, size_t pages, uint64_t *entries);

/* Moves fd to the top of the descriptor table and returns its new number (fd itself if it
 * cannot be moved): the copy's own descriptors must not take the numbers its program's next
 * open() would get, or the copy would run on differently. */
int specx_fd_out_of_the_way(int fd);

#endif
