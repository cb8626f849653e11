// Argument checks that both paths of the c10d backend share (dist_backend.cpp for the same-host
// path, dist_cross_host.cpp for the cross-host one). Header-only.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <functional>
#include <vector>

namespace torch_mtia::dist {

// Checks one tensor: check(t, collective, "each <what>") raises for a tensor the path cannot take.
using TensorCheck = std::function<void(const at::Tensor&, const char*, const char*)>;

// The list of world-size tensors that the root of a rooted collective passes (gather's outputs,
// scatter's inputs: what names them, likeWhat the single tensor of the other side, like), each
// checked by check and with like's element count and dtype; empty on the other ranks, which must
// pass no tensors. Throws c10::Error naming the collective and the argument.
inline std::vector<at::Tensor> rootList(const std::vector<std::vector<at::Tensor>>& lists,
                                        bool isRoot, int size, const at::Tensor& like,
                                        const char* collective, const char* what,
                                        const char* likeWhat, const TensorCheck& check) {
    if (!isRoot) {
        TORCH_CHECK(lists.empty() || (lists.size() == 1 && lists[0].empty()),
                    "torch_mtia.distributed: ", collective, ": only the root takes ", what,
                    " tensors");
        return {};
    }
    TORCH_CHECK(lists.size() == 1 && lists[0].size() == static_cast<size_t>(size),
                "torch_mtia.distributed: ", collective, ": the root expects one list of ", size,
                " ", what, " tensors");
    const std::string each = std::string("each ") + what;
    for (const at::Tensor& t : lists[0]) {
        check(t, collective, each.c_str());
        TORCH_CHECK(t.numel() == like.numel() && t.scalar_type() == like.scalar_type(),
                    "torch_mtia.distributed: ", collective, ": ", each, " must have the ", likeWhat,
                    "'s element count and dtype");
    }
    return lists[0];
}

}  // namespace torch_mtia::dist
