// Turns the copies the device allocators made (device_snapshot.hpp) into the
// snapshot model (allocator/snapshot/model.hpp) that the JSON and pickle
// writers write: names the C++ frames (symbolizer, once per distinct
// address), resolves framework ids through the provider (once per distinct
// id), interns identical stacks once, and fills allocator_settings and
// external_annotations. Runs with no allocator lock held.
#pragma once

#include "allocator/alloc_config.hpp"
#include "allocator/history/device_snapshot.hpp"
#include "allocator/history/history_recorder.hpp"
#include "allocator/snapshot/model.hpp"

#include <vector>

namespace mtia::allocator {

// deviceCount: how many device_traces lists to write (one per device of the process, empty or not).
// Drops every context reference the device copies hold (also when it throws). Thread-safe (the
// recorder and symbolizer are); throws std::bad_alloc.
mem::Snapshot assembleSnapshot(std::vector<DeviceSnapshot>& devices, int deviceCount,
                               const AllocConfig& config, HistoryRecorder& history);

// Drops the context references the copies hold (what assembleSnapshot does when done). Thread-safe.
void releaseSnapshotContexts(std::vector<DeviceSnapshot>& devices,
                             HistoryRecorder& history) noexcept;

// allocator_settings: PyTorch's keys for what we share with it (reference notes 4.2), from config.
mem::Value allocatorSettings(const AllocConfig& config);

}  // namespace mtia::allocator
