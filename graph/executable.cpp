#include "graph/executable.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <limits>

namespace mtia::graph {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kNotStarted = std::numeric_limits<uint64_t>::max();

bool isEventNode(NodeKind k) {
    return k == NodeKind::EventRecord || k == NodeKind::EventWait;
}

}  // namespace

Executable::Executable(const Graph& graph, const DeviceTarget& target) : target_(target) {
    build(graph);
    createLists();
}

Executable::~Executable() {
    for (Step& st : steps_)
        if (st.list != nullptr) target_.driver->ops().commandListDestroy(st.list);
}

// Lanes: a node continues the lane of a dependency that is still that lane's last node (a chain
// stays on one queue); otherwise it opens a new lane while there are engines to run it, or joins
// the lane whose last node is oldest. Steps: runs of consecutive nodes of one lane, cut where a
// node waits for another lane, where another lane waits for a node, and around event actions.
void Executable::build(const Graph& graph) {
    const std::vector<Node>& nodes = graph.nodes();
    const size_t n = nodes.size();
    const uint32_t maxLanes = static_cast<uint32_t>(std::max(1, target_.engines));
    std::vector<uint32_t> laneOf(n);
    std::vector<int64_t> tail;  // per lane: its last node so far
    for (NodeId i = 0; i < n; ++i) {
        uint32_t lane = kNone;
        for (NodeId d : nodes[i].deps)
            if (tail[laneOf[d]] == d) {
                lane = laneOf[d];
                break;
            }
        if (lane == kNone) {
            if (tail.size() < maxLanes) {
                lane = static_cast<uint32_t>(tail.size());
                tail.push_back(-1);
            } else {
                lane = static_cast<uint32_t>(std::min_element(tail.begin(), tail.end()) -
                                             tail.begin());
            }
        }
        laneOf[i] = lane;
        tail[lane] = i;
    }
    std::vector<char> crossOut(n, 0);
    for (NodeId i = 0; i < n; ++i)
        for (NodeId d : nodes[i].deps)
            if (laneOf[d] != laneOf[i]) crossOut[d] = 1;

    std::vector<uint32_t> stepOf(n, kNone);
    std::vector<uint32_t> open(tail.size(), kNone);  // per lane: the step still taking nodes
    std::vector<std::vector<mtiaDrvCommand>> stepCmds;
    for (NodeId i = 0; i < n; ++i) {
        const Node& node = nodes[i];
        const uint32_t lane = laneOf[i];
        std::vector<WaitOn> waits;
        for (NodeId d : node.deps) {
            if (laneOf[d] == lane) continue;
            const WaitOn w{laneOf[d], stepOf[d]};
            auto same = std::find_if(waits.begin(), waits.end(),
                                     [&](const WaitOn& x) { return x.lane == w.lane; });
            if (same == waits.end())
                waits.push_back(w);
            else
                same->step = std::max(same->step,
                                      w.step);  // a later step of a lane implies the earlier ones
        }
        const bool event = isEventNode(node.kind);
        if (event || !waits.empty() || open[lane] == kNone) {
            Step st;
            st.kind = node.kind == NodeKind::EventRecord ? StepKind::RecordEvent
                      : node.kind == NodeKind::EventWait ? StepKind::WaitEvent
                                                         : StepKind::Submit;
            st.lane = lane;
            st.waits = std::move(waits);
            st.event = node.event;
            open[lane] = static_cast<uint32_t>(steps_.size());
            steps_.push_back(std::move(st));
            stepCmds.emplace_back();
        }
        const uint32_t s = open[lane];
        stepOf[i] = s;
        if (!event) {
            mtiaDrvCommand cmd = node.cmd;
            if (node.kind == NodeKind::Kernel) {
                argBytes_.push_back(node.argBytes);
                std::vector<void*> ptrs(node.argOffsets.size());
                for (size_t a = 0; a < ptrs.size(); ++a)
                    ptrs[a] = argBytes_.back().data() + node.argOffsets[a];
                argPtrs_.push_back(std::move(ptrs));
                cmd.u.kernel.args = argPtrs_.back().data();
                if (node.keepAlive) keepAlive_.push_back(node.keepAlive);
            }
            stepCmds[s].push_back(cmd);
        }
        if (event || crossOut[i]) open[lane] = kNone;
    }
    for (size_t s = 0; s < steps_.size(); ++s) {
        steps_[s].firstCmd = static_cast<uint32_t>(cmds_.size());
        steps_[s].numCmds = static_cast<uint32_t>(stepCmds[s].size());
        cmds_.insert(cmds_.end(), stepCmds[s].begin(), stepCmds[s].end());
    }
    seqs_.assign(steps_.size(), 0);
    for (size_t l = 1; l < tail.size(); ++l)
        lanes_.push_back(std::make_shared<streams::Stream>(*target_.driver, target_.device,
                                                           target_.driverDevice, 0, 0));
    laneLast_.assign(lanes_.size(), kNotStarted);
}

void Executable::createLists() {
    if (!target_.driver->supportsCommandLists())
        return;  // older drivers get the commands one by one
    const mtiaDriverOps& ops = target_.driver->ops();
    for (Step& st : steps_) {
        if (st.kind != StepKind::Submit || st.numCmds == 0) continue;
        target_.driver->check(
            ops.commandListCreate(target_.driverDevice, &cmds_[st.firstCmd], st.numCmds, &st.list),
            "instantiating a graph (preparing its commands for the device)");
    }
}

void Executable::launch(streams::Stream& s) {
    if (lastStream_ && lastStream_.get() != &s)
        s.waitFor(*lastStream_, lastSeq_);  // replays never overlap
    if (steps_.empty()) return;
    const uint64_t start = lanes_.empty() ? 0 : s.lastSubmitted();
    std::fill(laneLast_.begin(), laneLast_.end(), kNotStarted);
    uint64_t last = 0;
    for (size_t i = 0; i < steps_.size(); ++i) {
        const Step& st = steps_[i];
        streams::Stream& lane = st.lane == 0 ? s : *lanes_[st.lane - 1];
        if (st.lane != 0 && laneLast_[st.lane - 1] == kNotStarted) {
            lane.waitFor(s, start);  // the replay starts after the work queued on s before it
            laneLast_[st.lane - 1] = 0;
        }
        for (const WaitOn& w : st.waits)
            lane.waitFor(w.lane == 0 ? s : *lanes_[w.lane - 1], seqs_[w.step]);
        switch (st.kind) {
        case StepKind::Submit:
            if (st.list != nullptr) {
                mtiaDrvCommand cmd{};
                cmd.type = mtiaDrvCmdList;
                cmd.u.list.list = st.list;
                last = lane.submitToDevice(cmd);
            } else {
                for (uint32_t c = 0; c < st.numCmds; ++c)
                    last = lane.submitToDevice(cmds_[st.firstCmd + c]);
            }
            break;
        case StepKind::RecordEvent:
            st.event->record(lane);
            last = lane.lastSubmitted();
            break;
        case StepKind::WaitEvent:
            st.event->enqueueWait(lane);
            last = lane.lastSubmitted();
            break;
        }
        seqs_[i] = last;
        if (st.lane != 0) laneLast_[st.lane - 1] = last;
    }
    for (size_t l = 0; l < lanes_.size(); ++l)
        if (laneLast_[l] != kNotStarted)
            s.waitFor(*lanes_[l], laneLast_[l]);  // later work waits for every leaf
    if (lastStream_.get() != &s) lastStream_ = s.shared_from_this();
    lastSeq_ = lanes_.empty() ? last : s.lastSubmitted();
}

void Executable::waitIdle() const noexcept {
    if (!lastStream_) return;
    try {
        lastStream_->wait(lastSeq_);
    } catch (...) {
        // a faulted device dropped the work: it is over either way
    }
}

void Executable::inheritOrder(const Executable& previous) {
    lastStream_ = previous.lastStream_;
    lastSeq_ = previous.lastSeq_;
}

}  // namespace mtia::graph
