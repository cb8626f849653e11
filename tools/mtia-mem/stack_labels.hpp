// How a stack is named in reports: by its allocation site, the innermost
// frame that is the program's own, "name (file:line)". Recorded stacks start
// with the machinery that took them (the allocator, the unwinder, the Python
// interpreter, PyTorch's dispatcher, with stacks="all"); none of those tells
// a person where the memory went, so they are passed over.
#pragma once

#include "allocator/snapshot/model.hpp"

#include <string>
#include <vector>

namespace mtia::mem {

// "forward (model.py:42)"; parts the frame lacks are left out.
std::string frameLabel(const Frame& f);
// The innermost frame not of the recording machinery (the innermost frame if all are), or null for
// an empty stack.
const Frame* siteFrame(const std::vector<Frame>& frames);
// frameLabel of siteFrame, or "(no stack recorded)".
std::string siteLabel(const StackTable& stacks, StackId id);
// frameLabel of each frame, innermost first, at most max of them.
std::vector<std::string> stackLabels(const StackTable& stacks, StackId id, size_t max);

}  // namespace mtia::mem
