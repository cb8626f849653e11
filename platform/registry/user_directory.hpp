// The private directory that holds every file of a user's registries: the
// registry objects, their lock files and the request directory (issue 16:
// names in /dev/shm itself can be taken first by any local user, and the
// sticky bit then keeps their owner from removing or using them).
//
// The directory is <shmDirectory>/mtia.u<uid>, created with mode 0700 and
// used only when lstat shows a directory (no link) of the user with no
// group/other permission: nobody else can create, replace or remove anything
// inside it. When another user holds that name, the user's directory is
// instead the first (by name) of <shmDirectory>/mtia.u<uid>.XXXXXX, made by
// mkdtemp (a name nobody can guess beforehand), among those that pass the
// same check; entries of other owners are ignored, whatever they are called.
// Two processes that create the fall-back at the same instant may each take
// their own (the later one settles on the first by name once it sees it);
// every later process agrees with the first by name.
//
// Thread safety: any thread. Blocking: a few file-system calls, no locks.
#pragma once

#include "status.hpp"

#include <sys/types.h>

#include <string>

namespace mtia::registry {

struct UserDirectory {
    std::string path;  // where the user's registry files live
    std::string
        notice;  // "" normally; why and where the fall-back is used when the usual name is taken
};

// Finds (create: and makes when missing) uid's directory. Errors: NotFound (missing and create is
// false), Permission (the usual directory is the user's own but has group/other bits: the message
// says how to fix it), System (mkdir, mkdtemp or lstat failed: the message names the path and errno
// text).
Status userDirectory(uid_t uid, bool create, UserDirectory& out);

// "<shmDirectory>/mtia.u<uid>": the usual place (for messages and tests).
std::string usualUserDirectory(uid_t uid);

}  // namespace mtia::registry
