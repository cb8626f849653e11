/* smi_holder MIB [DEVICE]: allocates MIB MiB on DEVICE (default 0) through the public API, prints
 * "ready" on stdout and waits to be killed, so that mtia-smi tests see a second process with known
 * figures and can watch it vanish after SIGKILL. */
#define _POSIX_C_SOURCE 200809L

#include <mtia/mtia.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  void* ptr = NULL;
  size_t mib;
  int dev = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: smi_holder MIB [DEVICE]\n");
    return 2;
  }
  mib = (size_t)strtoul(argv[1], NULL, 10);
  if (argc > 2) dev = atoi(argv[2]);
  if (mtiaSetDevice(dev) != mtiaSuccess || mtiaMalloc(&ptr, mib << 20) != mtiaSuccess) {
    fprintf(stderr, "smi_holder: %s\n", mtiaGetLastErrorMessage());
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
