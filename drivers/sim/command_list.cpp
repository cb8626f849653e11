#include "command_list.hpp"

namespace mtia::sim {

CommandList::CommandList(Device& device, size_t count)
    : device_(device), size_(count), commands_(new Command[count]) {}

CommandList::~CommandList() {
    for (Command& command : commands()) command.release();
}

}  // namespace mtia::sim
