#include "streams/ipc_event.hpp"

#include "core/error.hpp"

#include <cstdint>

namespace mtia::streams {
namespace {

struct Job {
    std::shared_ptr<const IpcEventShare> share;  // keeps the driver's event open until the job ran
    mtiaDrvIpcEvent event;
    const mtiaDriverOps* ops;
    uint64_t ticket;
};

void completeJob(void* userData) {
    Job* job = static_cast<Job*>(userData);
    job->share->complete(job->ticket);
    delete job;
}

void waitJob(void* userData) {
    Job* job = static_cast<Job*>(userData);
    // An error (event destroyed, exporter gone) ends the wait; query and synchronize report it.
    (void)job->ops->ipcEventWait(job->event, job->ticket, UINT64_MAX);
    delete job;
}

void submitJob(Stream& stream, void (*fn)(void*), Job* job) {
    mtiaDrvCommand cmd{};
    cmd.type = mtiaDrvCmdHostFunc;
    cmd.u.hostFunc.fn = fn;
    cmd.u.hostFunc.userData = job;
    try {
        stream.submit(cmd);
    } catch (...) {
        delete job;
        throw;
    }
}

}  // namespace

IpcEventShare::IpcEventShare(const driver::Driver& driver, mtiaDrvIpcEvent event, bool exporter,
                             const mtiaDrvIpcDescriptor& desc)
    : driver_(driver), event_(event), exporter_(exporter), desc_(desc) {}

IpcEventShare::~IpcEventShare() {
    close();
}

void IpcEventShare::close() noexcept {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    (void)driver_.ops().ipcEventClose(event_);
}

void IpcEventShare::complete(uint64_t ticket) const noexcept {
    std::lock_guard lock(mu_);
    if (!closed_) (void)driver_.ops().ipcEventComplete(event_, ticket);
}

void IpcEventShare::publish(Stream& stream) {
    const mtiaDriverOps& ops = driver_.ops();
    uint64_t ticket = 0;
    driver_.check(ops.ipcEventRecord(event_, &ticket), "recording the IPC event");
    try {
        submitJob(stream, completeJob, new Job{shared_from_this(), event_, &ops, ticket});
    } catch (...) {
        // Importers must not wait for a record that never runs.
        complete(ticket);
        throw;
    }
}

bool IpcEventShare::query() const {
    uint64_t ticket = 0;
    driver_.check(driver_.ops().ipcEventLatest(event_, &ticket), "reading the IPC event");
    const mtiaError_t s = driver_.ops().ipcEventWait(event_, ticket, 0);
    if (s == mtiaErrorNotReady) return false;
    driver_.check(s, "querying the IPC event");
    return true;
}

void IpcEventShare::synchronize() const {
    uint64_t ticket = 0;
    driver_.check(driver_.ops().ipcEventLatest(event_, &ticket), "reading the IPC event");
    driver_.check(driver_.ops().ipcEventWait(event_, ticket, UINT64_MAX),
                  "waiting for the IPC event");
}

void IpcEventShare::enqueueWait(Stream& stream) const {
    uint64_t ticket = 0;
    driver_.check(driver_.ops().ipcEventLatest(event_, &ticket), "reading the IPC event");
    if (ticket == 0) return;  // never recorded: nothing to wait for
    submitJob(stream, waitJob, new Job{shared_from_this(), event_, &driver_.ops(), ticket});
}

}  // namespace mtia::streams
