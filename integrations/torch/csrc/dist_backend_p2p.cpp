// The mtia backend's point-to-point messages and all_to_all with split sizes or lists, on the
// channels of dist_p2p.h (only the ranks of a pair synchronise, no group-wide step).
#include "dist_backend.h"

#include "dist_work.h"
#include "mtia_check.h"
#include "streams.h"

#include <c10/core/StreamGuard.h>

namespace torch_mtia::dist {

namespace {

// The tag of all_to_all's messages: user tags are non-negative (checked as gloo checks them), and
// every rank calls collectives in the same order, so one tag keeps each pair's messages in step.
constexpr int kAllToAllTag = -1;

const at::Tensor& p2pOnlyTensor(const std::vector<at::Tensor>& tensors, const char* what) {
    TORCH_CHECK(tensors.size() == 1, "torch_mtia.distributed: ", what,
                " takes one tensor per process (one device per rank), got ", tensors.size());
    return tensors[0];
}

int userTag(int tag, const char* what) {
    TORCH_CHECK(tag >= 0, "torch_mtia.distributed: ", what, ": tag must be non-negative, got ",
                tag);
    return tag;
}

void checkAllToAllTensor(const at::Tensor& t, const at::Tensor& first, const char* what) {
    TORCH_CHECK(t.device().type() == c10::DeviceType::MTIA, "torch_mtia.distributed: ", what,
                ": every tensor must be an mtia tensor, got one on ", t.device());
    TORCH_CHECK(t.is_contiguous() && !t.is_sparse(), "torch_mtia.distributed: ", what,
                ": every tensor must be dense and contiguous");
    TORCH_CHECK(t.scalar_type() == first.scalar_type() && t.device() == first.device(),
                "torch_mtia.distributed: ", what,
                ": every tensor must have the dtype and device "
                "of the first (",
                first.scalar_type(), " on ", first.device(), "), got ", t.scalar_type(), " on ",
                t.device());
}

// Split sizes along dim 0; an empty list splits dim 0 equally.
std::vector<int64_t> splitsOf(const std::vector<int64_t>& given, const at::Tensor& t, int size,
                              const char* which) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    if (given.empty()) {
        TORCH_CHECK(rows % size == 0, "torch_mtia.distributed: all_to_all_single: without ", which,
                    " split sizes, dim 0 of the ", which, " (", rows,
                    ") must be divisible by the world size (", size, ")");
        return std::vector<int64_t>(size, rows / size);
    }
    TORCH_CHECK(given.size() == static_cast<size_t>(size),
                "torch_mtia.distributed: "
                "all_to_all_single: ",
                which, "_split_sizes must have world size (", size, ") entries, got ",
                given.size());
    int64_t sum = 0;
    for (int64_t s : given) {
        TORCH_CHECK(s >= 0, "torch_mtia.distributed: all_to_all_single: ", which,
                    "_split_sizes must not be negative, got ", s);
        sum += s;
    }
    TORCH_CHECK(sum == rows, "torch_mtia.distributed: all_to_all_single: ", which,
                "_split_sizes add up to ", sum, ", dim 0 of the ", which, " is ", rows);
    return given;
}

}  // namespace

PointToPoint& MtiaBackend::p2p() {
    if (!p2p_) p2p_ = std::make_unique<PointToPoint>(store_, rank_, size_, timeout_);
    return *p2p_;
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                 int tag) {
    if (CrossHostComm* x = cross(deviceOf(tensors)))
        return crossCall("send", [&] { return x->send(tensors, dstRank, tag); });
    const at::Tensor& t = p2pOnlyTensor(tensors, "send");
    return p2p().send(t, dstRank, userTag(tag, "send"));
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                 int tag) {
    if (CrossHostComm* x = cross(deviceOf(tensors)))
        return crossCall("recv", [&] { return x->recv(tensors, srcRank, tag); });
    const at::Tensor& t = p2pOnlyTensor(tensors, "recv");
    TORCH_CHECK(srcRank >= 0, "torch_mtia.distributed: recv: source rank ", srcRank,
                " is not in the group of ", size_);
    return p2p().recv(t, srcRank, userTag(tag, "recv"));
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::recvAnysource(std::vector<at::Tensor>& tensors,
                                                          int tag) {
    if (CrossHostComm* x = cross(deviceOf(tensors)))
        return crossCall("recvAnysource", [&] { return x->recvAnysource(tensors, tag); });
    const at::Tensor& t = p2pOnlyTensor(tensors, "recv");
    return p2p().recv(t, -1, userTag(tag, "recv"));
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::alltoallPairs(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          c10d::OpType type, const char* title) {
    SameHostComm& c = comm(inputs[rank_]);
    joinCaller(c);
    PointToPoint& pairs = p2p();
    std::vector<c10::intrusive_ptr<P2PWork>> parts;
    for (int d = 0; d < size_; ++d) {
        if (d == rank_) continue;
        parts.push_back(pairs.send(inputs[d], d, kAllToAllTag));
        parts.push_back(pairs.recv(outputs[d], d, kAllToAllTag));
    }
    c10::StreamGuard guard(toC10Stream(c.stream()));
    TORCH_CHECK(outputs[rank_].nbytes() == inputs[rank_].nbytes(),
                "torch_mtia.distributed: ", title, ": rank ", rank_, " sends itself ",
                inputs[rank_].nbytes(), " bytes but receives ", outputs[rank_].nbytes());
    if (inputs[rank_].nbytes() != 0) {
        MTIA_CHECK(mtiaMemcpyAsync(outputs[rank_].data_ptr(), inputs[rank_].data_ptr(),
                                   inputs[rank_].nbytes(), mtiaMemcpyDefault, c.stream()));
    }
    for (const auto& part : parts) {
        part->waitPosted(timeout_);
        MTIA_CHECK(mtiaStreamWaitEvent(c.stream(), part->event(), 0));
    }
    for (const auto* list : {&inputs, &outputs}) {
        for (const at::Tensor& t : *list) {
            void* base = t.storage().mutable_data();
            if (base == nullptr) continue;
            const mtiaError_t status = mtiaRecordStream(base, c.stream());
            if (status != mtiaErrorInvalidValue) MTIA_CHECK(status);
        }
    }
    return c10::make_intrusive<MtiaWork>(rank_, type, title, inputs[rank_].device(), c.stream(),
                                         inputs, outputs);
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::alltoallSplit(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplitSizes,
                                                          std::vector<int64_t>& inputSplitSizes) {
    checkAllToAllTensor(input, input, "all_to_all_single");
    checkAllToAllTensor(output, input, "all_to_all_single");
    const auto ins = splitsOf(inputSplitSizes, input, size_, "input");
    const auto outs = splitsOf(outputSplitSizes, output, size_, "output");
    const auto rowOf = [](const at::Tensor& t) {
        int64_t row = 1;
        for (int64_t i = 1; i < t.dim(); ++i) row *= t.size(i);
        return row;
    };
    const int64_t row = rowOf(input);
    TORCH_CHECK(rowOf(output) == row,
                "torch_mtia.distributed: all_to_all_single: input and output "
                "must have the same number of elements per row of dim 0 (",
                row, " and ", rowOf(output), ")");
    const at::Tensor flatIn = input.view({-1}), flatOut = output.view({-1});
    std::vector<at::Tensor> inputs, outputs;
    int64_t inOff = 0, outOff = 0;
    for (int r = 0; r < size_; ++r) {
        inputs.push_back(flatIn.narrow(0, inOff * row, ins[r] * row));
        outputs.push_back(flatOut.narrow(0, outOff * row, outs[r] * row));
        inOff += ins[r];
        outOff += outs[r];
    }
    return alltoallPairs(outputs, inputs, c10d::OpType::ALLTOALL_BASE, "mtia:all_to_all");
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::alltoall(std::vector<at::Tensor>& outputTensors,
                                                     std::vector<at::Tensor>& inputTensors,
                                                     const c10d::AllToAllOptions& opts) {
    if (CrossHostComm* x = cross(deviceOf(inputTensors)))
        return crossCall("alltoall",
                         [&] { return x->alltoall(outputTensors, inputTensors, opts); });
    TORCH_CHECK(outputTensors.size() == static_cast<size_t>(size_) &&
                    inputTensors.size() == static_cast<size_t>(size_),
                "torch_mtia.distributed: all_to_all: expected lists of world size (", size_,
                ") tensors, got ", outputTensors.size(), " outputs and ", inputTensors.size(),
                " inputs");
    for (const at::Tensor& t : inputTensors) checkAllToAllTensor(t, inputTensors[0], "all_to_all");
    for (const at::Tensor& t : outputTensors) checkAllToAllTensor(t, inputTensors[0], "all_to_all");
    return alltoallPairs(outputTensors, inputTensors, c10d::OpType::ALLTOALL, "mtia:all_to_all");
}

}  // namespace torch_mtia::dist
