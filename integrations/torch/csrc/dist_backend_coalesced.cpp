// The mtia backend's coalesced collectives (FSDP's all_gather_into_tensor and
// reduce_scatter_tensor under torch.distributed's coalescing manager, dist.all_gather_coalesced):
// the collectives one after the other on the group's stream, and one work whose event follows the
// last of them.
#include "dist_backend.h"

#include "dist_work.h"

namespace torch_mtia::dist {

namespace {

void checkCoalescedLists(size_t outputs, size_t inputs, const char* what) {
    TORCH_CHECK(inputs != 0, "torch_mtia.distributed: ", what, ": no input tensors");
    TORCH_CHECK(outputs == inputs, "torch_mtia.distributed: ", what, ": ", outputs, " outputs for ",
                inputs, " inputs (one output per input expected)");
}

}  // namespace

c10::intrusive_ptr<c10d::Work>
MtiaBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputTensorLists,
                                 std::vector<at::Tensor>& inputTensors,
                                 const c10d::AllgatherOptions& opts) {
    // outputTensorLists[r][i] receives rank r's inputTensors[i] (gloo's layout).
    TORCH_CHECK(!inputTensors.empty(), "torch_mtia.distributed: all_gather_coalesced: no input "
                                       "tensors");
    TORCH_CHECK(outputTensorLists.size() == static_cast<size_t>(size_),
                "torch_mtia.distributed: all_gather_coalesced: expected world size (", size_,
                ") output lists, got ", outputTensorLists.size());
    for (const auto& list : outputTensorLists) {
        checkCoalescedLists(list.size(), inputTensors.size(), "all_gather_coalesced");
    }
    std::vector<at::Tensor> outputs;
    for (size_t i = 0; i < inputTensors.size(); ++i) {
        std::vector<std::vector<at::Tensor>> out(1);
        for (const auto& list : outputTensorLists) out[0].push_back(list[i]);
        std::vector<at::Tensor> in{inputTensors[i]};
        allgather(out, in, opts);
        outputs.insert(outputs.end(), out[0].begin(), out[0].end());
    }
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::ALLGATHER_COALESCED,
                                         "mtia:all_gather_coalesced", inputTensors[0].device(),
                                         groupStream(), inputTensors, outputs);
}

c10::intrusive_ptr<c10d::Work>
MtiaBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const c10d::AllgatherOptions& opts) {
    checkCoalescedLists(outputs.size(), inputs.size(), "all_gather_into_tensor_coalesced");
    for (size_t i = 0; i < inputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::COALESCED,
                                         "mtia:all_gather_into_tensor_coalesced",
                                         inputs[0].device(), groupStream(), inputs, outputs);
}

c10::intrusive_ptr<c10d::Work>
MtiaBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const c10d::ReduceScatterOptions& opts) {
    checkCoalescedLists(outputs.size(), inputs.size(), "reduce_scatter_tensor_coalesced");
    for (size_t i = 0; i < inputs.size(); ++i) _reduce_scatter_base(outputs[i], inputs[i], opts);
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED,
                                         "mtia:reduce_scatter_tensor_coalesced", inputs[0].device(),
                                         groupStream(), inputs, outputs);
}

}  // namespace torch_mtia::dist
