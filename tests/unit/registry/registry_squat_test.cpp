// Another local user takes every name the registry uses in /dev/shm before the
// victim does (issue 16 item 5): /dev/shm is world-writable and sticky, so the
// victim can neither remove nor use what the other user created there. The
// victim's registry, its listing (mtia-smi), its cleanup and its request
// directory must still work. Both users are throw-away uids (setresuid in
// forked children), so nothing of the real users' registries is touched.
#include "registry_test_util.hpp"

#include "platform/registry/cleanup.hpp"
#include "platform/registry/requests.hpp"

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace mtia::registry::test {
namespace {

constexpr uid_t kSquatter = 65534;

// A uid nobody uses, distinct per test process so parallel runs never meet.
uid_t victimUid() {
    return 61000 + static_cast<uid_t>(getpid() % 3000);
}

bool becomeUser(uid_t uid) {
    return setresgid(uid, uid, uid) == 0 && setresuid(uid, uid, uid) == 0;
}

// Every entry of /dev/shm whose name starts with one of prefixes.
std::vector<std::string> shmEntries(const std::vector<std::string>& prefixes) {
    std::vector<std::string> out;
    if (DIR* dir = opendir("/dev/shm")) {
        while (const dirent* e = readdir(dir)) {
            const std::string name = e->d_name;
            for (const std::string& p : prefixes)
                if (name.compare(0, p.size(), p) == 0) out.push_back("/dev/shm/" + name);
        }
        closedir(dir);
    }
    return out;
}

void removeTree(const std::string& path) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        if (DIR* dir = opendir(path.c_str())) {
            std::vector<std::string> names;
            while (const dirent* e = readdir(dir))
                if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
                    names.push_back(e->d_name);
            closedir(dir);
            for (const std::string& n : names) removeTree(path + "/" + n);
        }
        rmdir(path.c_str());
    } else {
        unlink(path.c_str());
    }
}

// Whatever either user left in /dev/shm for the victim's uid.
void removeUserFiles(uid_t uid) {
    const std::string u = std::to_string(uid);
    for (const std::string& p : shmEntries(
             {"mtia.u" + u, "mtia_registry.v" + std::to_string(kLayoutVersion) + ".u" + u + ".",
              "mtia_requests.u" + u}))
        removeTree(p);
}

struct RemoveUserFiles {
    uid_t uid;
    ~RemoveUserFiles() { removeUserFiles(uid); }
};

// What the victim checks; 0 when everything works, else the number of the first failing step.
int victimWorks(const MachineSpec& spec, std::string* notice) {
    const uid_t me = geteuid();
    std::unique_ptr<Registry> registry;
    const Status opened = Registry::open(spec, {}, registry);
    if (!opened) {
        std::fprintf(stderr, "victim: open: %s\n", opened.message.c_str());
        return 10;
    }
    if (notice != nullptr) *notice = registry->notice();
    if (!registry->reserve(0, 2 * kMiB)) return 11;
    // mtia-smi: lists the machine and reads it.
    const std::vector<std::string> listed = listMachines(me);
    if (std::find(listed.begin(), listed.end(), registry->name()) == listed.end()) return 12;
    std::unique_ptr<Registry> reader;
    if (const Status s = Registry::openReadOnly(registry->name(), reader); !s) {
        std::fprintf(stderr, "victim: read-only open: %s\n", s.message.c_str());
        return 13;
    }
    if (reader->processes().size() != 1) return 14;
    reader.reset();
    // Snapshot requests: the private directory of request files.
    std::string dir;
    if (const Status s = requestDirectory(me, true, dir); !s) {
        std::fprintf(stderr, "victim: request directory: %s\n", s.message.c_str());
        return 15;
    }
    // mtia-smi cleanup: keeps the live registry, then removes it once it is unused.
    CleanupReport report;
    if (const Status s = cleanupMachine(registry->name(), report); !s || report.removed) return 16;
    const std::string name = registry->name();
    registry.reset();
    if (const Status s = cleanupMachine(name, report); !s || !report.removed) {
        std::fprintf(stderr, "victim: cleanup: %s\n", s.message.c_str());
        return 17;
    }
    // And a second process of the victim finds the same place again.
    if (!Registry::open(spec, {}, registry)) return 18;
    return 0;
}

TEST(RegistrySquat, NamesTakenByAnotherUserDenyNothing) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to act as two other users (setresuid)";
    const uid_t victim = victimUid();
    const RemoveUserFiles removeAtEnd{victim};
    removeUserFiles(victim);
    const MachineSpec spec = uniqueMachine();
    const std::string u = std::to_string(victim);
    const std::string legacy = "/dev/shm/" + spec.objectName(victim);
    const pid_t squatter = forkChild([&] {
        if (!becomeUser(kSquatter)) return 1;
        umask(0);
        // The user directory, as a world-writable directory of the squatter's, and a decoy of the
        // fall-back names; every name older versions used, too.
        if (mkdir(("/dev/shm/mtia.u" + u).c_str(), 0777) != 0) return 2;
        if (mkdir(("/dev/shm/mtia.u" + u + ".000000").c_str(), 0777) != 0) return 3;
        if (mkdir(("/dev/shm/mtia_requests.u" + u).c_str(), 0777) != 0) return 4;
        for (const std::string& path : {legacy, legacy + ".lock"}) {
            const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0666);
            if (fd < 0) return 5;
            close(fd);
        }
        return 0;
    });
    ASSERT_EQ(waitChild(squatter), 0);

    int notice[2];
    ASSERT_EQ(pipe(notice), 0);
    const pid_t user = forkChild([&] {
        if (!becomeUser(victim)) return 1;
        std::string text;
        const int rc = victimWorks(spec, &text);
        (void)!write(notice[1], text.data(), text.size());
        return rc;
    });
    close(notice[1]);
    EXPECT_EQ(waitChild(user), 0);
    char buffer[1024] = {};
    const ssize_t got = read(notice[0], buffer, sizeof buffer - 1);
    close(notice[0]);
    // The victim is told what happened and how to get the usual place back.
    const std::string text(buffer, got > 0 ? static_cast<size_t>(got) : 0);
    EXPECT_NE(text.find("/dev/shm/mtia.u" + u), std::string::npos) << text;
    EXPECT_NE(text.find("uid 65534"), std::string::npos) << text;
    // Nothing of the victim's went into the squatter's directories.
    for (const std::string& dir : {"/dev/shm/mtia.u" + u, "/dev/shm/mtia.u" + u + ".000000",
                                   "/dev/shm/mtia_requests.u" + u}) {
        DIR* d = opendir(dir.c_str());
        ASSERT_NE(d, nullptr) << dir;
        int entries = 0;
        while (const dirent* e = readdir(d)) entries += e->d_name[0] != '.';
        closedir(d);
        EXPECT_EQ(entries, 0) << dir;
    }
}

TEST(RegistrySquat, LinkedUserDirectoryIsNotFollowed) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to act as two other users (setresuid)";
    const uid_t victim = victimUid();
    const RemoveUserFiles removeAtEnd{victim};
    removeUserFiles(victim);
    const MachineSpec spec = uniqueMachine();
    const std::string u = std::to_string(victim);
    const std::string trap = "/dev/shm/mtia-squat-trap." + std::to_string(getpid());
    struct RemoveTrap {
        std::string path;
        ~RemoveTrap() { removeTree(path); }
    } removeTrap{trap};
    const pid_t squatter = forkChild([&] {
        if (!becomeUser(kSquatter)) return 1;
        umask(0);
        if (mkdir(trap.c_str(), 0777) != 0) return 2;
        return symlink(trap.c_str(), ("/dev/shm/mtia.u" + u).c_str()) == 0 ? 0 : 3;
    });
    ASSERT_EQ(waitChild(squatter), 0);
    const pid_t user = forkChild([&] {
        if (!becomeUser(victim)) return 1;
        return victimWorks(spec, nullptr);
    });
    EXPECT_EQ(waitChild(user), 0);
    DIR* d = opendir(trap.c_str());
    ASSERT_NE(d, nullptr);
    int entries = 0;
    while (const dirent* e = readdir(d)) entries += e->d_name[0] != '.';
    closedir(d);
    EXPECT_EQ(entries, 0) << "the victim wrote into the squatter's directory";
}

}  // namespace
}  // namespace mtia::registry::test
