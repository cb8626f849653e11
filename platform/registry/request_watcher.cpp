#include "request_watcher.hpp"

#include "requests.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace mtia::registry {

bool RequestWatcher::start(Slot& slot, uint32_t slotIndex, const std::string& registryName,
                           const std::string& userDirectory) {
    stop();
    slot_ = &slot;
    index_ = slotIndex;
    registry_ = registryName;
    directory_ = userDirectory;
    stopping_.store(false, std::memory_order_relaxed);
    started_.store(0, std::memory_order_relaxed);
    // The new thread inherits the creator's mask: block everything around the create.
    // A stack of our own, mapped anew for each thread: a forked child still maps its parent's
    // watcher stack, and a cached one reused there would give the new thread the dead one's
    // pthread_t (which ThreadSanitizer, still tracking the parent's thread, rejects as a
    // duplicate).
    stack_ = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (stack_ == MAP_FAILED) {
        stack_ = nullptr;
        return false;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack_, kStackBytes);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    running_ = pthread_create(&thread_, &attr, &RequestWatcher::main, this) == 0;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    pthread_attr_destroy(&attr);
    if (!running_) {
        ::munmap(stack_, kStackBytes);
        stack_ = nullptr;
    }
    if (running_) {
        pthread_setname_np(thread_, "mtia-requests");
        // Returns once the thread runs our code: its start-up (the C library's and a sanitizer's
        // allocations for a new thread) is over, so a fork right after start() never copies a lock
        // the new thread held half-way through it (ASan's allocator, unlike glibc's, is not
        // fork-safe).
        started_.wait(0, std::memory_order_acquire);
    }
    return running_;
}

void RequestWatcher::stop() {
    if (!running_) return;
    stopping_.store(true, std::memory_order_release);
    // A non-zero low half makes a FUTEX_WAIT that has not started yet return at once: no lost
    // wake-up.
    slot_->request.store(makeRequest(RequestOp::Stop, UINT32_MAX), std::memory_order_release);
    wakeRequestWord(slot_->request);
    pthread_join(thread_, nullptr);
    running_ = false;
    ::munmap(stack_, kStackBytes);
    stack_ = nullptr;
}

void* RequestWatcher::main(void* self) {
    auto* w = static_cast<RequestWatcher*>(self);
    std::atomic<uint64_t>& word = w->slot_->request;
    w->started_.store(1, std::memory_order_release);
    w->started_.notify_one();
    for (;;) {
        const uint64_t request = word.load(std::memory_order_acquire);
        if (w->stopping_.load(std::memory_order_acquire)) return nullptr;
        if (requestToken(request) == 0) {
            // Sleeps only while the low half is still 0; a tool's store then FUTEX_WAKE ends it.
            ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, 0u, nullptr,
                      nullptr, 0);
            continue;
        }
        w->serve(request);
    }
}

void RequestWatcher::serve(uint64_t request) {
    const uint32_t token = requestToken(request);
    const auto op = static_cast<RequestOp>(requestOp(request));
    RequestResult result = RequestResult::NotSupported;
    std::string path;
    if (op == RequestOp::SnapshotPickle || op == RequestOp::SnapshotJson) {
        if (RequestHandler handler = requestHandler(); handler != nullptr) {
            std::string dir;
            result = RequestResult::Failed;
            if (requestDirectory(directory_, true, dir)) {
                // Written under a temporary name, created here with mode 0600 before any byte goes
                // in (the handler truncates and fills it; the mode stays), and renamed when
                // complete: the final name never shows a partial file, and a killed writer leaves
                // only the .tmp (removeRequestFiles).
                const std::string temp = requestTempFile(dir, registry_, index_, token, op);
                const int fd = ::open(temp.c_str(),
                                      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0 && ::fchmod(fd, 0600) == 0) {
                    ::close(fd);
                    result = handler(op, temp.c_str());
                    if (result == RequestResult::Done) {
                        path = requestFile(dir, registry_, index_, token, op);
                        if (::rename(temp.c_str(), path.c_str()) != 0) {
                            result = RequestResult::Failed;
                            path.clear();
                        }
                    }
                } else if (fd >= 0) {
                    ::close(fd);
                }
                if (result != RequestResult::Done) ::unlink(temp.c_str());
            }
        }
    }
    // Clear the request only if it is still there; then answer it. Posts never replace a pending
    // request, so gone means its tool withdrew it (it stopped waiting; another tool may have posted
    // since) or we are stopping (a tool still waiting sees the slot go): nobody will take the file,
    // which may be large and lives in memory (/dev/shm), so it goes now, unanswered.
    uint64_t expected = request;
    if (!slot_->request.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) {
        if (!path.empty()) ::unlink(path.c_str());
        return;
    }
    // One answer word for every tool: the previous tool takes its answer (clears the word) within a
    // few milliseconds of its poll; until then ours would overwrite it unseen. A tool that died
    // never takes it, hence the bound.
    for (int waited = 0; waited < 1000 && slot_->ack.load(std::memory_order_acquire) != 0; ++waited)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    slot_->ack.store(makeAck(result, token), std::memory_order_release);
    wakeRequestWord(slot_->ack);
}

}  // namespace mtia::registry
