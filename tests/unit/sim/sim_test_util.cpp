#include "sim_test_util.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

extern char** environ;

namespace simtest {

const mtiaDriverOps& table() {
    static const mtiaDriverOps ops = [] {
        mtiaDriverOps t{};
        t.structSize = sizeof(t);
        if (mtiaSimDriverGetOps(MTIA_DRIVER_API_VERSION, &t) != mtiaSuccess) std::abort();
        return t;
    }();
    return ops;
}

bool envIs(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, value) == 0;
}

void SimTest::SetUp() {
    ASSERT_EQ(d.init(0), mtiaSuccess) << d.lastErrorMessage();
}

int32_t SimTest::deviceCount() const {
    int32_t n = 0;
    EXPECT_EQ(d.deviceGetCount(&n), mtiaSuccess);
    return n;
}

mtiaDrvDeviceInfo SimTest::info(int32_t dev) const {
    mtiaDrvDeviceInfo i{};
    i.structSize = sizeof(i);
    EXPECT_EQ(d.deviceGetInfo(dev, &i), mtiaSuccess) << d.lastErrorMessage();
    return i;
}

DeviceBuffer::DeviceBuffer(int32_t dev, uint64_t bytes)
    : dev_(dev), size_((bytes + kGran - 1) / kGran * kGran) {
    const mtiaDriverOps& d = table();
    EXPECT_EQ(d.vaReserve(dev, size_, 0, &va_), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(d.memCreate(dev, size_, &mem_), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(d.memMap(va_, size_, mem_, 0), mtiaSuccess) << d.lastErrorMessage();
}

DeviceBuffer::~DeviceBuffer() {
    const mtiaDriverOps& d = table();
    EXPECT_EQ(d.memUnmap(va_, size_), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(d.memRelease(mem_), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(d.vaRelease(dev_, va_, size_), mtiaSuccess) << d.lastErrorMessage();
}

mtiaDrvQueue makeQueue(int32_t dev, int32_t priority) {
    mtiaDrvQueue q = nullptr;
    EXPECT_EQ(table().queueCreate(dev, priority, 0, &q), mtiaSuccess) << table().lastErrorMessage();
    return q;
}

mtiaDrvKernel builtin(const char* name) {
    mtiaDrvKernel k = nullptr;
    EXPECT_EQ(table().moduleGetKernel(nullptr, name, &k), mtiaSuccess)
        << table().lastErrorMessage();
    return k;
}

uint64_t submit(mtiaDrvQueue q, const mtiaDrvCommand& cmd) {
    uint64_t seq = 0;
    EXPECT_EQ(table().queueSubmit(q, &cmd, &seq), mtiaSuccess) << table().lastErrorMessage();
    return seq;
}

uint64_t submitTimestamp(mtiaDrvQueue q, uint64_t* out) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdTimestamp;
    c.u.timestamp.out = out;
    return submit(q, c);
}

uint64_t submitWait(mtiaDrvQueue q, mtiaDrvQueue target, uint64_t value) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdWait;
    c.u.wait.queue = target;
    c.u.wait.value = value;
    return submit(q, c);
}

uint64_t submitHost(mtiaDrvQueue q, std::function<void()>* fn) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdHostFunc;
    c.u.hostFunc.fn = [](void* p) { (*static_cast<std::function<void()>*>(p))(); };
    c.u.hostFunc.userData = fn;
    return submit(q, c);
}

uint64_t submitSleep(mtiaDrvQueue q, uint64_t micros) {
    return launch(q, "sleep_us", {1, 1, 1}, micros);
}

mtiaDrvCommand kernelCommand(mtiaDrvKernel kernel, mtiaDim3 grid, void** args, mtiaDim3 block,
                             uint64_t sharedMem) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdKernel;
    c.u.kernel.kernel = kernel;
    c.u.kernel.grid = grid;
    c.u.kernel.block = block;
    c.u.kernel.sharedMem = sharedMem;
    c.u.kernel.args = args;
    return c;
}

mtiaError_t finish(mtiaDrvQueue q) {
    // A timestamp completes after everything submitted before it.
    uint64_t stamp = 0;
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdTimestamp;
    c.u.timestamp.out = &stamp;
    uint64_t last = 0;
    const mtiaError_t submitted = table().queueSubmit(q, &c, &last);
    if (submitted == mtiaErrorLaunchFailure) {
        // The queue's device faulted meanwhile and takes no more work: wait for what it still
        // drains.
        int32_t devices = 0;
        table().deviceGetCount(&devices);
        for (int32_t dev = 0; dev < devices; ++dev) table().deviceSynchronize(dev);
        return mtiaErrorLaunchFailure;
    }
    if (submitted != mtiaSuccess) return submitted;
    return table().queueWait(q, last, MTIA_DRV_WAIT_SLEEP);
}

bool runIsolated(const std::string& test) {
    char marker[] = "/tmp/mtia-sim-isolated-XXXXXX";
    const int fd = mkstemp(marker);
    if (fd < 0) return false;
    close(fd);
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back(std::string("MTIA_SIM_ISOLATED=") + marker);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string filter = "--gtest_filter=" + test;
    char self[] = "/proc/self/exe";
    char* argv[] = {self, filter.data(), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, self, nullptr, nullptr, argv, envp.data()) != 0) return false;
    int status = 0;
    waitpid(pid, &status, 0);
    std::ifstream in(marker);
    std::string ran;
    std::getline(in, ran);
    unlink(marker);
    EXPECT_EQ(ran, "ran") << test << " did not run in the child";
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && ran == "ran";
}

bool isolatedChild() {
    const char* marker = std::getenv("MTIA_SIM_ISOLATED");
    if (marker == nullptr) return false;
    std::ofstream(marker) << "ran\n";
    return true;
}

}  // namespace simtest
