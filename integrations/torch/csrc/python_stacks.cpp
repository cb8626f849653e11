// capture() runs on the allocating thread before the allocator takes its lock: it takes the GIL
// (PyTorch releases it around operators, so this cannot deadlock with the allocator) and copies the
// frames into a table under a plain mutex. resolve() and release() only touch that table, never
// Python, so a snapshot taken while another thread holds the GIL cannot deadlock either.
#include "python_stacks.h"

#include "mtia_check.h"

#include <Python.h>
#include <frameobject.h>

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch_mtia {
namespace {

struct Frame {
    std::string filename;
    int64_t line;
    std::string name;
};

std::mutex tableMutex;
std::unordered_map<uint64_t, std::vector<Frame>>* table =
    new std::unordered_map<uint64_t, std::vector<Frame>>();
std::atomic<uint64_t> nextId{1};

std::string text(PyObject* unicode) {
    const char* s = unicode != nullptr ? PyUnicode_AsUTF8(unicode) : nullptr;
    if (s == nullptr) {
        PyErr_Clear();
        return "??";
    }
    return s;
}

// The frames of the calling thread's Python stack, innermost first; may throw (bad_alloc).
std::vector<Frame> pythonFrames() {
    std::vector<Frame> frames;
    const PyGILState_STATE state = PyGILState_Ensure();
    PyFrameObject* frame = PyThreadState_GetFrame(PyThreadState_Get());  // new reference or NULL
    try {
        while (frame != nullptr) {
            PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
            Frame f{text(code->co_filename), PyFrame_GetLineNumber(frame), text(code->co_name)};
            Py_DECREF(code);
            frames.push_back(std::move(f));
            PyFrameObject* back = PyFrame_GetBack(frame);  // new reference or NULL
            Py_DECREF(frame);
            frame = back;
        }
    } catch (...) {
        Py_XDECREF(frame);
        PyGILState_Release(state);
        throw;
    }
    PyGILState_Release(state);
    return frames;
}

// The provider's callbacks are C callbacks, called inside mtiaMalloc and friends: nothing may
// escape them. A capture that fails (out of host memory) records no context (0).
uint64_t capture(void*) noexcept {
    try {
        if (!Py_IsInitialized()) return 0;
        std::vector<Frame> frames = pythonFrames();
        if (frames.empty()) return 0;
        const uint64_t id = nextId.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(tableMutex);
        table->emplace(id, std::move(frames));
        return id;
    } catch (...) {
        return 0;
    }
}

void resolve(void*, uint64_t id, mtiaFrameSink emit, void* sink) noexcept {
    try {
        std::vector<Frame> frames;
        {
            std::lock_guard<std::mutex> lock(tableMutex);
            auto it = table->find(id);
            if (it == table->end()) return;
            frames = it->second;
        }
        for (const Frame& f : frames) emit(sink, f.filename.c_str(), f.line, f.name.c_str());
    } catch (...) {
        // Out of host memory: the stack stays unresolved.
    }
}

void release(void*, uint64_t id) noexcept {
    try {
        std::lock_guard<std::mutex> lock(tableMutex);
        table->erase(id);
    } catch (...) {
        // std::mutex::lock may throw system_error; the entry stays.
    }
}

}  // namespace

void installPythonContextProvider() {
    static std::once_flag once;
    std::call_once(once, [] {
        mtiaContextProvider provider{};
        provider.structSize = sizeof provider;
        provider.capture = &capture;
        provider.resolve = &resolve;
        provider.release = &release;
        MTIA_CHECK(mtiaMemorySetContextProvider(&provider));
    });
}

}  // namespace torch_mtia
