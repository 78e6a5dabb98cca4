/* Where CPython keeps the GIL's lock word, for the kernel's poll before it takes the GIL back
   (_kernels.c, gil_spin). CPython names it only in its internal headers, which require
   Py_BUILD_CORE: hence a file of its own, so that the kernel proper is built against the
   public API alone. NULL (never poll: CPython's own wait) for a CPython whose layout this
   file does not know, or whose internal headers are not installed. */

#include <patchlevel.h>

/* 3.11: one GIL for the runtime, _PyRuntime.ceval.gil (internal/pycore_runtime.h). Only where
   _kernels.c polls at all (C11 atomics, a POSIX clock; not MSVC): elsewhere the internal
   headers are never included, so that they cannot fail the extension's build. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && defined(__has_include) &&             \
    !defined(_MSC_VER) && !defined(__STDC_NO_ATOMICS__) && (defined(__unix__) || defined(__APPLE__))
#if __has_include(<internal/pycore_runtime.h>)
#define DRS_GIL_WORD 1
#endif
#endif

#if DRS_GIL_WORD
#define Py_BUILD_CORE_MODULE 1
#endif
#include <Python.h>
#if DRS_GIL_WORD
#include <internal/pycore_runtime.h>
#endif

#include "_gil.h"

const void *
drs_gil_word(void)
{
#if DRS_GIL_WORD
    /* _Py_atomic_int: an int, alone in its struct */
    return &_PyRuntime.ceval.gil.locked;
#else
    return NULL;
#endif
}
