/* MTIA runtime version: the single version source. Both build systems read
 * these three macros, so the header, the soname and the package files agree. */
#ifndef MTIA_VERSION_H
#define MTIA_VERSION_H

#define MTIA_VERSION_MAJOR 1
#define MTIA_VERSION_MINOR 0
#define MTIA_VERSION_PATCH 0

/* Packs a version for ordered comparisons: MTIA_MAKE_VERSION(1, 2, 0). */
#define MTIA_MAKE_VERSION(major, minor, patch) (((major)*1000000) + ((minor)*1000) + (patch))
#define MTIA_VERSION MTIA_MAKE_VERSION(MTIA_VERSION_MAJOR, MTIA_VERSION_MINOR, MTIA_VERSION_PATCH)

#endif /* MTIA_VERSION_H */
