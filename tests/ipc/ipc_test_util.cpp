#include "ipc_test_util.hpp"

#include <dirent.h>

#include <cstdlib>

namespace mtia::ipc::test {

void expectExporterAndImporterPass(const std::function<int()>& exporter,
                                   const std::function<int()>& importer,
                                   const std::function<::testing::AssertionResult()>& between) {
    const pid_t exporterPid = forkChild(exporter);
    KillOnExit guardExporter{exporterPid};
    const pid_t importerPid = forkChild(importer);
    KillOnExit guardImporter{importerPid};
    if (between) {
        ASSERT_TRUE(between());
    }
    EXPECT_EQ(waitChild(importerPid), 0) << "the importer";
    EXPECT_EQ(waitChild(exporterPid), 0) << "the exporter";
}

::testing::AssertionResult releaseWhenSaid(Channel& toParent, Channel& release) {
    char said = 0;
    if (!toParent.receive(said))
        return ::testing::AssertionFailure() << "the importer did not say it waits";
    const char go = 1;
    if (!release.send(go))
        return ::testing::AssertionFailure() << "could not release the exporter's stream";
    return ::testing::AssertionSuccess();
}

int memoryFileOf(pid_t pid) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return -1;
    int found = -1;
    while (dirent* e = readdir(d)) {
        char target[256] = {};
        const std::string link = dir + "/" + e->d_name;
        const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
        if (n > 0 && std::string(target).find("memfd:mtia-sim-dev0") != std::string::npos) {
            found = std::atoi(e->d_name);
            break;
        }
    }
    closedir(d);
    return found;
}

}  // namespace mtia::ipc::test
