// Writes the model of snapshot.hpp as PyTorch 2.x's snapshot dict (segments,
// device_traces, allocator_settings, external_annotations; reference notes
// 4.2), in JSON or as a pickle that torch's memory viewer loads. An older
// shape read in comes out as 2.x.
#pragma once

#include "allocator/snapshot/model.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace mtia::mem {

// Receives the JSON text in order, in chunks of about 1 MiB.
using JsonSink = std::function<void(std::string_view)>;
void writeJson(const Snapshot& snap, const JsonSink& sink);
void writeJson(const Snapshot& snap, std::ostream& out);
std::string toPickle(const Snapshot& snap);

}  // namespace mtia::mem
