#include "stack_labels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace mtia::mem {

namespace {

// The machinery between a program's call and the recorded allocation: PyTorch's and our allocators
// and dispatchers (C++ namespaces, demangled or not: our runtime's native frames name a function as
// its symbol table has it), stack unwinders, the CPython interpreter loop, process start-up.
constexpr std::string_view kMachineryNamespaces[] = {"c10::",     "at::",     "torch::", "mtia::",
                                                     "std::",     "_ZN4mtia", "_ZN3c10", "_ZN2at",
                                                     "_ZN5torch", "_ZNSt"};
constexpr std::string_view kMachineryNameParts[] = {
    "mtiaMalloc",  "unwind",       "CapturedTraceback", "PyEval_",           "PyObject_",
    "PyFunction_", "PyVectorcall", "cfunction_call",    "method_vectorcall", "__libc_start",
    "??",
};
constexpr std::string_view kMachineryFiles[] = {
    "torch/cuda/memory.py",
    "torch/utils/_python_dispatch.py",
    "torch/_ops.py",
    "ceval.c",
    "Objects/call.c",
    "Objects/methodobject.c",
    "pycore_",
    "<frozen",
    "??",
    "libmtia.so",
    "libpython",
    "libc.so",
};

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

bool isMachinery(const Frame& f) {
    if ((f.name.empty() && f.filename.empty()) || f.name == "_start") return true;
    for (std::string_view ns : kMachineryNamespaces)
        if (f.name.starts_with(ns)) return true;
    for (std::string_view part : kMachineryNameParts)
        if (contains(f.name, part)) return true;
    for (std::string_view file : kMachineryFiles)
        if (contains(f.filename, file)) return true;
    return false;
}

}  // namespace

std::string frameLabel(const Frame& f) {
    const std::string_view name = f.name.empty() ? std::string_view("?") : std::string_view(f.name);
    if (f.filename.empty()) return std::string(name);
    if (f.line > 0) return fmt::format("{} ({}:{})", name, f.filename, f.line);
    return fmt::format("{} ({})", name, f.filename);
}

const Frame* siteFrame(const std::vector<Frame>& frames) {
    if (frames.empty()) return nullptr;
    const auto it =
        std::find_if(frames.begin(), frames.end(), [](const Frame& f) { return !isMachinery(f); });
    return it != frames.end() ? &*it : &frames.front();
}

std::string siteLabel(const StackTable& stacks, StackId id) {
    const Frame* f = siteFrame(stacks.frames(id));
    return f != nullptr ? frameLabel(*f) : std::string("(no stack recorded)");
}

std::vector<std::string> stackLabels(const StackTable& stacks, StackId id, size_t max) {
    std::vector<std::string> out;
    for (const Frame& f : stacks.frames(id)) {
        if (out.size() == max) break;
        out.push_back(frameLabel(f));
    }
    return out;
}

}  // namespace mtia::mem
