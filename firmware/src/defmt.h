/* Included first in the FW_DEFMT image only (the Makefile's -include): the hooks fw.c calls
 * through DEFMT(...), defined in defmt.c, which fw.c includes at its end. */
#ifndef AHIL_DEFMT_H
#define AHIL_DEFMT_H
#include <stdint.h>

void defmt_rtt_init(void);
void defmt_boot(const char *version);
void defmt_tick(uint32_t n);
#endif
