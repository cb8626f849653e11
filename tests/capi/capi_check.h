/* A tiny C99 check harness for the pure-C ABI tests: each CHECK counts one
 * assertion; capi_summary() prints "N passed, M failed" and gives the exit
 * status. Uses only the public header. */
#ifndef CAPI_CHECK_H
#define CAPI_CHECK_H

#include <mtia/mtia.h>

#include <stdio.h>
#include <string.h>

static int capi_passed = 0, capi_failed = 0;

#define CHECK_TRUE(cond)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            ++capi_passed;                                                                         \
        } else {                                                                                   \
            ++capi_failed;                                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* The call must return want; on a mismatch print both names and the message. */
#define CHECK_STATUS(want, call)                                                                   \
    do {                                                                                           \
        mtiaError_t got_ = (call);                                                                 \
        if (got_ == (want)) {                                                                      \
            ++capi_passed;                                                                         \
        } else {                                                                                   \
            ++capi_failed;                                                                         \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n  message: %s\n", __FILE__,       \
                    __LINE__, #call, mtiaGetErrorName(got_), mtiaGetErrorName(want),               \
                    mtiaGetLastErrorMessage());                                                    \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(mtiaSuccess, call)

/* The last error message must contain text. */
#define CHECK_MESSAGE(text)                                                                        \
    do {                                                                                           \
        if (strstr(mtiaGetLastErrorMessage(), (text)) != NULL) {                                   \
            ++capi_passed;                                                                         \
        } else {                                                                                   \
            ++capi_failed;                                                                         \
            fprintf(stderr, "%s:%d: message lacks \"%s\": %s\n", __FILE__, __LINE__, (text),       \
                    mtiaGetLastErrorMessage());                                                    \
        }                                                                                          \
    } while (0)

static int capi_summary(void) {
    printf("%d passed, %d failed\n", capi_passed, capi_failed);
    return capi_failed == 0 && capi_passed > 0 ? 0 : 1;
}

#endif /* CAPI_CHECK_H */
