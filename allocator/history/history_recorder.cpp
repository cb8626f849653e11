#include "allocator/history/history_recorder.hpp"

#include "allocator/history/stacks/native_stack.hpp"
#include "core/error.hpp"

#include <algorithm>

namespace mtia::allocator {

namespace {
thread_local uint32_t tlMetadata = 0;  // the calling thread's user_metadata (index into metadata_)
}

HistoryRecorder::~HistoryRecorder() = default;

void HistoryRecorder::configure(HistoryMode mode, mtiaStackMode stacks,
                                size_t maxEntries) noexcept {
    stacks_.store(static_cast<uint8_t>(stacks), std::memory_order_relaxed);
    maxEntries_.store(maxEntries == 0 ? kDefaultEntries : maxEntries, std::memory_order_relaxed);
    mode_.store(mode, std::memory_order_release);
}

AllocContext* HistoryRecorder::capture() {
    const uint8_t stacks = stacks_.load(std::memory_order_relaxed);
    if (stacks == mtiaStacksNone) return nullptr;
    void* pcs[kMaxFrames];
    uint32_t n = 0;
    if ((stacks & mtiaStacksCpp) != 0)
        n = static_cast<uint32_t>(captureNativeStackFrom(pcs, kMaxFrames, tlApiReturnAddress));
    uint64_t id = 0;
    if ((stacks & mtiaStacksFramework) != 0) {
        std::shared_lock<std::shared_mutex> lock(providerMu_);
        if (hasProvider_) {
            id = provider_.capture(provider_.user);
            if (id != 0) heldIds_.fetch_add(1, std::memory_order_relaxed);
        }
    }
    if (n == 0 && id == 0) return nullptr;
    AllocContext* c = nullptr;
    try {
        c = AllocContext::make(n, id);
    } catch (...) {
        if (id != 0) {  // nothing will refer to it: give it back at once
            std::shared_lock<std::shared_mutex> lock(providerMu_);
            if (hasProvider_ && provider_.release != nullptr) provider_.release(provider_.user, id);
            heldIds_.fetch_sub(1, std::memory_order_relaxed);
        }
        throw;
    }
    std::copy_n(pcs, n, c->frames());
    return c;
}

void HistoryRecorder::unref(AllocContext* c) noexcept {
    if (c == nullptr || !c->unref()) return;
    const uint64_t id = c->frameworkId();
    AllocContext::destroy(c);
    if (id == 0) return;
    std::lock_guard<std::mutex> lock(releaseMu_);
    try {
        releases_.push_back(id);
    } catch (...) {
        // Out of host memory: the id is never released (the provider keeps one traceback too many).
        heldIds_.fetch_sub(1, std::memory_order_relaxed);
        return;
    }
    pendingReleases_.store(true, std::memory_order_release);
}

void HistoryRecorder::drainSlow() noexcept {
    std::vector<uint64_t> ids;
    {
        std::lock_guard<std::mutex> lock(releaseMu_);
        ids.swap(releases_);
        pendingReleases_.store(false, std::memory_order_relaxed);
    }
    if (ids.empty()) return;
    std::shared_lock<std::shared_mutex> lock(providerMu_);
    for (uint64_t id : ids)
        if (hasProvider_ && provider_.release != nullptr) provider_.release(provider_.user, id);
    heldIds_.fetch_sub(static_cast<int64_t>(ids.size()), std::memory_order_relaxed);
}

void HistoryRecorder::setProvider(const mtiaContextProvider* provider) {
    if (provider != nullptr) {
        if (provider->structSize < sizeof(mtiaContextProvider))
            fail(mtiaErrorInvalidValue,
                 "provider->structSize is {}; set it to sizeof(mtiaContextProvider) = {}",
                 provider->structSize, sizeof(mtiaContextProvider));
        if (provider->capture == nullptr) fail(mtiaErrorInvalidValue, "provider->capture is NULL");
        if (provider->resolve == nullptr) fail(mtiaErrorInvalidValue, "provider->resolve is NULL");
    }
    drain();
    std::unique_lock<std::shared_mutex> lock(providerMu_);
    if (const int64_t held = heldIds_.load(std::memory_order_relaxed); held > 0 && hasProvider_)
        fail(mtiaErrorIllegalState,
             "{} context ids of the current provider are still held by recorded allocations; turn "
             "recording off "
             "(mtiaMemoryRecordHistory(mtiaHistoryOff, ...)) before replacing the provider",
             held);
    hasProvider_ = provider != nullptr;
    provider_ = hasProvider_ ? *provider : mtiaContextProvider{};
}

void HistoryRecorder::resolve(uint64_t id, std::vector<mem::Frame>& out) {
    std::shared_lock<std::shared_mutex> lock(providerMu_);
    if (!hasProvider_ || id == 0) return;
    provider_.resolve(
        provider_.user, id,
        [](void* sink, const char* filename, int64_t line, const char* name) {
            auto* frames = static_cast<std::vector<mem::Frame>*>(sink);
            try {
                frames->push_back(
                    {filename != nullptr ? filename : "", line, name != nullptr ? name : ""});
            } catch (...) {
                // out of host memory: the frame is left out
            }
        },
        &out);
}

void HistoryRecorder::annotate(std::string_view key, const char* value, int device) {
    const bool start = value != nullptr && value[0] != '\0';
    mem::Value a = mem::Value::dict();
    a.add("name", mem::Value::of(std::string(key)));
    a.add("value", mem::Value::of(std::string(start ? value : "")));
    a.add("stage", mem::Value::of(std::string(start ? "START" : "END")));
    a.add("device", mem::Value::of(static_cast<int64_t>(device)));
    a.add("time_us", mem::Value::of(nowUs()));
    std::lock_guard<std::mutex> lock(annotateMu_);
    uint32_t id = 0;
    if (start) {
        std::string text = std::string(key) + "=" + value;
        auto [it, added] = metadataIds_.try_emplace(text, static_cast<uint32_t>(metadata_.size()));
        if (added) {
            try {
                metadata_.push_back(std::move(text));
            } catch (...) {
                metadataIds_.erase(it);
                throw;
            }
        }
        id = it->second;
    }
    if (annotations_.size() == kMaxAnnotations) annotations_.pop_front();
    annotations_.push_back(std::move(a));
    tlMetadata = id;
    annotated_.store(true, std::memory_order_relaxed);
}

std::vector<mem::Value> HistoryRecorder::annotations() const {
    std::lock_guard<std::mutex> lock(annotateMu_);
    return {annotations_.begin(), annotations_.end()};
}

uint32_t HistoryRecorder::threadMetadata() const noexcept {
    return tlMetadata;
}

std::string HistoryRecorder::metadataText(uint32_t id) const {
    std::lock_guard<std::mutex> lock(annotateMu_);
    return id < metadata_.size() ? metadata_[id] : std::string();
}

}  // namespace mtia::allocator
