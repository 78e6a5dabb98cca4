/* _gil.c: the address of the GIL's lock word (an int, non-zero while some thread holds the
   GIL), or NULL where this build of CPython's layout is not known. */
#ifndef DRS_GIL_H
#define DRS_GIL_H
#if defined(__GNUC__)
__attribute__((visibility("hidden")))
#endif
const void *drs_gil_word(void);
#endif
