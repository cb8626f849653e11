/* smi_holder MIB [DEVICE [MODE...]]: allocates MIB MiB on DEVICE (default 0) through the public
 * API, prints "ready" on stdout and waits to be killed, so that mtia-smi tests see a second process
 * with known figures and can watch it vanish after SIGKILL. MODE words: history  records memory
 * history (mtiaHistoryAll) before allocating, so a snapshot has traces; busy     keeps the device
 * busy instead of sleeping: fills 1 MiB of it in a loop (utilisation); split    allocates the MIB
 * as two blocks (MIB/2 and the rest) rather than one. SIGTERM (when not busy) ends it with exit(0),
 * so its atexit handlers run, as at a program's own end. */
#define _POSIX_C_SOURCE 200809L

#include <mtia/mtia.h>
#include <mtia/mtia_memory_history.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t gStop = 0;
static void onTerm(int sig) {
    (void)sig;
    gStop = 1;
}

static void die(const char* what) {
    fprintf(stderr, "smi_holder: %s: %s\n", what, mtiaGetLastErrorMessage());
    exit(1);
}

int main(int argc, char** argv) {
    void* ptr = NULL;
    void* second = NULL;
    size_t mib;
    int dev = 0, busy = 0, history = 0, split = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: smi_holder MIB [DEVICE [history] [busy] [split]]\n");
        return 2;
    }
    mib = (size_t)strtoul(argv[1], NULL, 10);
    if (argc > 2) dev = atoi(argv[2]);
    for (int i = 3; i < argc; ++i) {
        if (strcmp(argv[i], "busy") == 0)
            busy = 1;
        else if (strcmp(argv[i], "history") == 0)
            history = 1;
        else if (strcmp(argv[i], "split") == 0)
            split = 1;
        else {
            fprintf(stderr, "smi_holder: unknown mode '%s'\n", argv[i]);
            return 2;
        }
    }
    if (mtiaSetDevice(dev) != mtiaSuccess) die("mtiaSetDevice");
    if (history && mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 1000) != mtiaSuccess)
        die("mtiaMemoryRecordHistory");
    if (split) {
        if (mtiaMalloc(&ptr, (mib / 2) << 20) != mtiaSuccess ||
            mtiaMalloc(&second, (mib - mib / 2) << 20) != mtiaSuccess)
            die("mtiaMalloc");
    } else if (mtiaMalloc(&ptr, mib << 20) != mtiaSuccess) {
        die("mtiaMalloc");
    }
    printf("ready\n");
    fflush(stdout);
    if (busy) {
        for (;;) {
            /* 1 MiB fills: each command is short (also under sanitizers), so busy time reaches the
             * registry often (it is added when an engine finishes a stretch of commands). */
            if (mtiaMemsetAsync(ptr, 1, 1u << 20, NULL) != mtiaSuccess) die("mtiaMemsetAsync");
            if (mtiaDeviceSynchronize() != mtiaSuccess) die("mtiaDeviceSynchronize");
        }
    }
    struct sigaction term;
    memset(&term, 0, sizeof term);
    term.sa_handler = onTerm;
    sigemptyset(&term.sa_mask);
    sigaction(SIGTERM, &term, NULL);
    while (!gStop) pause();
    return 0;
}
