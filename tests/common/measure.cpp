#include "measure.hpp"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

namespace mtia_test {
namespace {

// Entries of a directory other than . and ..; -1 when unreadable.
int countEntries(const char* dir) {
    DIR* d = opendir(dir);
    if (d == nullptr) return -1;
    int n = 0;
    while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') ++n;
    closedir(d);
    return n;
}

}  // namespace

Clock::duration threadCpuTime() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

int64_t residentBytes() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return -1;
    long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%lld %lld", &size, &resident);
    std::fclose(f);
    return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

int openFds() {
    const int n = countEntries("/proc/self/fd");
    return n < 0 ? n : n - 1;  // minus the directory's own descriptor
}

int threadCount() {
    return countEntries("/proc/self/task");
}

}  // namespace mtia_test
