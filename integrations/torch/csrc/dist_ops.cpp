// c10d's collectives on MTIA tensors. ProcessGroup's methods call c10d::* operators through the
// dispatcher, and PyTorch 2.13 implements them for CPU, CUDA and PrivateUse1 only (Ops.cpp); for
// MTIA tensors they are implemented here, each passing its arguments on to the group's backend
// for the MTIA device type (the "mtia" backend, or whichever backend the group registered for
// devices=["mtia"]). monitored_barrier_ is not registered: ProcessGroup.monitored_barrier always
// passes a CPU tensor (it is gloo's alone, as for NCCL groups).
#include <ATen/core/op_registration/op_registration.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/library.h>

namespace torch_mtia::dist {

namespace {

using c10d::ProcessGroup;
using c10d::ReduceOp;
using c10d::Work;
using PG = c10::intrusive_ptr<ProcessGroup>;
using TensorLists = std::vector<std::vector<at::Tensor>>;

c10::intrusive_ptr<c10d::Backend> backendOf(const PG& pg) {
    return pg->getBackend(c10::DeviceType::MTIA);
}

std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<Work>>
broadcastMtia(at::TensorList tensors, const PG& pg, int64_t root, int64_t rootTensor, bool asyncOp,
              int64_t timeout) {
    auto list = tensors.vec();
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.rootTensor = rootTensor;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->broadcast(list, opts);
    return {std::move(list), work};
}

std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<Work>>
allreduceMtia(at::TensorList tensors, const PG& pg, const c10::intrusive_ptr<ReduceOp>& op,
              const std::optional<at::Tensor>& sparseIndices, bool asyncOp, int64_t timeout) {
    // As NCCL without its sparse path: the device has no sparse tensors to reduce.
    TORCH_CHECK(!sparseIndices.has_value(), "torch.distributed: the mtia backend reduces dense "
                                            "tensors only (all_reduce with sparse_indices)");
    auto list = tensors.vec();
    c10d::AllreduceOptions opts;
    opts.reduceOp = *op;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->allreduce(list, opts);
    return {std::move(list), work};
}

c10::intrusive_ptr<Work> allreduceCoalescedMtia(at::TensorList tensors, const PG& pg,
                                                const c10::intrusive_ptr<ReduceOp>& op,
                                                bool asyncOp, int64_t timeout) {
    auto list = tensors.vec();
    c10d::AllreduceCoalescedOptions opts;
    opts.reduceOp = *op;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    return backendOf(pg)->allreduce_coalesced(list, opts);
}

std::tuple<TensorLists, c10::intrusive_ptr<Work>> allgatherMtia(const TensorLists& outputs,
                                                                at::TensorList inputs, const PG& pg,
                                                                bool asyncOp, int64_t timeout) {
    auto outs = outputs;
    auto ins = inputs.vec();
    c10d::AllgatherOptions opts;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->allgather(outs, ins, opts);
    return {std::move(outs), work};
}

std::tuple<at::Tensor, c10::intrusive_ptr<Work>> allgatherBaseMtia(at::Tensor& output,
                                                                   at::Tensor& input, const PG& pg,
                                                                   bool asyncOp, int64_t timeout) {
    c10d::AllgatherOptions opts;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->_allgather_base(output, input, opts);
    return {output, work};
}

std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<Work>>
reduceScatterMtia(const at::TensorList& outputs, const TensorLists& inputs, const PG& pg,
                  const c10::intrusive_ptr<ReduceOp>& op, bool asyncOp, int64_t timeout) {
    auto outs = outputs.vec();
    auto ins = inputs;
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = *op;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->reduce_scatter(outs, ins, opts);
    return {std::move(outs), work};
}

std::tuple<at::Tensor, c10::intrusive_ptr<Work>>
reduceScatterBaseMtia(at::Tensor& output, at::Tensor& input, const PG& pg,
                      const c10::intrusive_ptr<ReduceOp>& op, bool asyncOp, int64_t timeout) {
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = *op;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->_reduce_scatter_base(output, input, opts);
    return {output, work};
}

c10::intrusive_ptr<Work> barrierMtia(at::Tensor tensor, const PG& pg,
                                     const std::vector<int64_t>& deviceIds, bool asyncOp,
                                     int64_t timeout) {
    c10d::BarrierOptions opts;
    opts.device_ids = deviceIds;
    opts.device = tensor.device();
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    return backendOf(pg)->barrier(opts);
}

c10::intrusive_ptr<Work> reduceMtia(at::TensorList tensors, const PG& pg,
                                    const c10::intrusive_ptr<ReduceOp>& op, int64_t root,
                                    int64_t rootTensor, bool asyncOp, int64_t timeout) {
    auto list = tensors.vec();
    c10d::ReduceOptions opts;
    opts.reduceOp = *op;
    opts.rootRank = root;
    opts.rootTensor = rootTensor;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    return backendOf(pg)->reduce(list, opts);
}

c10::intrusive_ptr<Work> gatherMtia(const TensorLists& outputs, const at::TensorList& inputs,
                                    const PG& pg, int64_t root, bool asyncOp, int64_t timeout) {
    auto outs = outputs;
    auto ins = inputs.vec();
    c10d::GatherOptions opts;
    opts.rootRank = root;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    return backendOf(pg)->gather(outs, ins, opts);
}

std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<Work>>
scatterMtia(const at::TensorList& outputs, const TensorLists& inputs, const PG& pg, int64_t root,
            bool asyncOp, int64_t timeout) {
    auto outs = outputs.vec();
    auto ins = inputs;
    c10d::ScatterOptions opts;
    opts.rootRank = root;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->scatter(outs, ins, opts);
    return {std::move(outs), work};
}

c10::intrusive_ptr<Work> alltoallBaseMtia(at::Tensor& output, at::Tensor& input, const PG& pg,
                                          std::vector<int64_t> outputSplits,
                                          std::vector<int64_t> inputSplits, bool asyncOp,
                                          int64_t timeout) {
    c10d::AllToAllOptions opts;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    return backendOf(pg)->alltoall_base(output, input, outputSplits, inputSplits, opts);
}

std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<Work>>
alltoallMtia(const at::TensorList& outputs, const at::TensorList& inputs, const PG& pg,
             bool asyncOp, int64_t timeout) {
    auto outs = outputs.vec();
    auto ins = inputs.vec();
    c10d::AllToAllOptions opts;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    auto work = backendOf(pg)->alltoall(outs, ins, opts);
    return {std::move(outs), work};
}

c10::intrusive_ptr<Work> sendMtia(at::TensorList tensors, const PG& pg, int64_t dst, int64_t tag) {
    auto list = tensors.vec();
    return backendOf(pg)->send(list, static_cast<int>(dst), static_cast<int>(tag));
}

c10::intrusive_ptr<Work> recvMtia(at::TensorList tensors, const PG& pg, int64_t src, int64_t tag) {
    auto list = tensors.vec();
    return backendOf(pg)->recv(list, static_cast<int>(src), static_cast<int>(tag));
}

c10::intrusive_ptr<Work> recvAnySourceMtia(at::TensorList tensors, const PG& pg, int64_t tag) {
    auto list = tensors.vec();
    return backendOf(pg)->recvAnysource(list, static_cast<int>(tag));
}

c10::intrusive_ptr<Work> allgatherCoalescedMtia(const TensorLists& outputs,
                                                const at::TensorList& inputs, const PG& pg,
                                                bool asyncOp) {
    auto outs = outputs;
    auto ins = inputs.vec();
    c10d::AllgatherOptions opts;
    opts.asyncOp = asyncOp;
    return backendOf(pg)->allgather_coalesced(outs, ins, opts);
}

c10::intrusive_ptr<Work> allgatherIntoTensorCoalescedMtia(at::TensorList outputs,
                                                          at::TensorList inputs, const PG& pg,
                                                          bool asyncOp) {
    auto outs = outputs.vec();
    auto ins = inputs.vec();
    c10d::AllgatherOptions opts;
    opts.asyncOp = asyncOp;
    return backendOf(pg)->allgather_into_tensor_coalesced(outs, ins, opts);
}

c10::intrusive_ptr<Work> reduceScatterTensorCoalescedMtia(at::TensorList outputs,
                                                          at::TensorList inputs, const PG& pg,
                                                          const c10::intrusive_ptr<ReduceOp>& op,
                                                          bool asyncOp, int64_t timeout) {
    auto outs = outputs.vec();
    auto ins = inputs.vec();
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = *op;
    opts.asyncOp = asyncOp;
    opts.timeout = std::chrono::milliseconds(timeout);
    return backendOf(pg)->reduce_scatter_tensor_coalesced(outs, ins, opts);
}

}  // namespace

TORCH_LIBRARY_IMPL(c10d, MTIA, m) {
    m.impl("broadcast_", broadcastMtia);
    m.impl("allreduce_", allreduceMtia);
    m.impl("allreduce_coalesced_", allreduceCoalescedMtia);
    m.impl("allgather_", allgatherMtia);
    m.impl("_allgather_base_", allgatherBaseMtia);
    m.impl("reduce_scatter_", reduceScatterMtia);
    m.impl("_reduce_scatter_base_", reduceScatterBaseMtia);
    m.impl("barrier", barrierMtia);
    m.impl("reduce_", reduceMtia);
    m.impl("gather_", gatherMtia);
    m.impl("scatter_", scatterMtia);
    m.impl("alltoall_base_", alltoallBaseMtia);
    m.impl("alltoall_", alltoallMtia);
    m.impl("send", sendMtia);
    m.impl("recv_", recvMtia);
    m.impl("recv_any_source_", recvAnySourceMtia);
    m.impl("allgather_coalesced_", allgatherCoalescedMtia);
    m.impl("allgather_into_tensor_coalesced_", allgatherIntoTensorCoalescedMtia);
    m.impl("reduce_scatter_tensor_coalesced_", reduceScatterTensorCoalescedMtia);
}

}  // namespace torch_mtia::dist
