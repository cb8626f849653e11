#include "bounded_hwloc.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mtia::topology {

namespace {

std::string errnoText(int err) {
    return std::strerror(err);
}

// Reads the whole regular file at path, at most kMaxXmlBytes. The checks are on the open
// descriptor, so what is checked is what is read.
bool readXmlFile(const char* path, std::string& text, std::string& why) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        why = "cannot open it: " + errnoText(errno);
        return false;
    }
    struct stat st {};
    bool ok = false;
    if (::fstat(fd, &st) != 0) {
        why = "cannot stat it: " + errnoText(errno);
    } else if (!S_ISREG(st.st_mode)) {
        why = "not a regular file";
    } else if (static_cast<uint64_t>(st.st_size) > kMaxXmlBytes) {
        why = "larger than " + std::to_string(kMaxXmlBytes) + " bytes";
    } else {
        ok = true;
        text.clear();
        char buffer[65536];
        for (;;) {
            const ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n == 0) break;
            if (n < 0) {
                if (errno == EINTR) continue;
                why = "cannot read it: " + errnoText(errno);
                ok = false;
                break;
            }
            if (text.size() + static_cast<size_t>(n) > kMaxXmlBytes) {  // grew while being read
                why = "larger than " + std::to_string(kMaxXmlBytes) + " bytes";
                ok = false;
                break;
            }
            text.append(buffer, static_cast<size_t>(n));
        }
    }
    ::close(fd);
    return ok;
}

bool isDirectory(const char* path, std::string& why) {
    struct stat st {};
    if (::stat(path, &st) != 0) {
        why = "cannot stat it: " + errnoText(errno);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        why = "not a directory";
        return false;
    }
    return true;
}

}  // namespace

bool checkXmlNesting(std::string_view xml, int maxDepth, std::string& why) {
    int depth = 0;
    size_t i = 0;
    auto skipPast = [&](std::string_view end) {
        const size_t at = xml.find(end, i);
        i = at == std::string_view::npos ? xml.size() : at + end.size();
    };
    while ((i = xml.find('<', i)) != std::string_view::npos) {
        const std::string_view rest = xml.substr(i);
        if (rest.starts_with("<!--")) {
            i += 4;
            skipPast("-->");
        } else if (rest.starts_with("<![CDATA[")) {
            i += 9;
            skipPast("]]>");
        } else if (rest.starts_with("<?")) {
            i += 2;
            skipPast("?>");
        } else if (rest.starts_with("<!")) {  // DOCTYPE; an internal subset is not hwloc's format
            i += 2;
            skipPast(">");
        } else if (rest.starts_with("</")) {
            i += 2;
            skipPast(">");
            --depth;
        } else {
            // A start tag: find its end outside quoted attribute values; "/>" closes it at once.
            char quote = 0;
            size_t j = i + 1;
            for (; j < xml.size(); ++j) {
                const char c = xml[j];
                if (quote != 0) {
                    if (c == quote) quote = 0;
                } else if (c == '"' || c == '\'') {
                    quote = c;
                } else if (c == '>') {
                    break;
                }
            }
            const bool selfClosing = j < xml.size() && j > i + 1 && xml[j - 1] == '/';
            i = j < xml.size() ? j + 1 : xml.size();
            if (!selfClosing && ++depth > maxDepth) {
                why = "elements nested deeper than " + std::to_string(maxDepth) + " levels";
                return false;
            }
        }
    }
    return true;
}

bool checkSynthetic(std::string_view description, std::string& why) {
    if (description.size() > kMaxSyntheticLength) {
        why = "longer than " + std::to_string(kMaxSyntheticLength) + " characters";
        return false;
    }
    // Drop attributes "(...)" and attached memory "[...]", nesting included; what is left are the
    // levels.
    std::string levels;
    int nested = 0;
    for (const char c : description) {
        if (c == '(' || c == '[') {
            ++nested;
        } else if ((c == ')' || c == ']') && nested > 0) {
            --nested;
        } else if (nested == 0) {
            levels.push_back(c);
        }
    }
    uint64_t objects = 1;
    size_t i = 0;
    while (i < levels.size()) {
        while (i < levels.size() && std::isspace(static_cast<unsigned char>(levels[i]))) ++i;
        if (i == levels.size()) break;
        size_t end = i;
        while (end < levels.size() && !std::isspace(static_cast<unsigned char>(levels[end]))) ++end;
        const std::string_view level = std::string_view(levels).substr(i, end - i);
        i = end;
        // "type:N" or a bare "N"; anything else has no arity and is left to hwloc to refuse.
        const size_t colon = level.rfind(':');
        const std::string_view arity =
            colon == std::string_view::npos ? level : level.substr(colon + 1);
        uint64_t n = 0;
        bool digits = !arity.empty();
        for (const char c : arity) {
            if (c < '0' || c > '9') {
                digits = false;
                break;
            }
            n = n * 10 + static_cast<uint64_t>(c - '0');
            if (n > kMaxSyntheticObjects) break;
        }
        if (!digits) continue;
        if (n > kMaxSyntheticObjects || (n > 0 && objects > kMaxSyntheticObjects / n)) {
            why = "describes more than " + std::to_string(kMaxSyntheticObjects) + " objects";
            return false;
        }
        objects *= n;
    }
    return true;
}

hwloc_topology_t loadBoundedTopology(IoObjects io, std::string& why, bool* refused) {
    if (refused != nullptr) *refused = true;
    // hwloc's own order of precedence (topology.c): FSROOT, then CPUID_PATH, then SYNTHETIC, then
    // XMLFILE. Each one set is checked, also those hwloc would not use, so a refusal never depends
    // on precedence.
    std::string problem;
    const char* fsroot = std::getenv("HWLOC_FSROOT");
    if (fsroot != nullptr && !isDirectory(fsroot, problem)) {
        why = std::string("HWLOC_FSROOT=") + fsroot + " is refused (" + problem + ")";
        return nullptr;
    }
    const char* cpuid = std::getenv("HWLOC_CPUID_PATH");
    if (cpuid != nullptr && !isDirectory(cpuid, problem)) {
        why = std::string("HWLOC_CPUID_PATH=") + cpuid + " is refused (" + problem + ")";
        return nullptr;
    }
    const char* synthetic = std::getenv("HWLOC_SYNTHETIC");
    if (synthetic != nullptr && !checkSynthetic(synthetic, problem)) {
        why = "HWLOC_SYNTHETIC is refused (" + problem + ")";
        return nullptr;
    }
    const char* xmlPath = std::getenv("HWLOC_XMLFILE");
    std::string xml;
    if (xmlPath != nullptr) {
        if (!readXmlFile(xmlPath, xml, problem) || !checkXmlNesting(xml, kMaxXmlDepth, problem)) {
            why = std::string("HWLOC_XMLFILE=") + xmlPath + " is refused (" + problem + ")";
            return nullptr;
        }
    }

    if (refused != nullptr) *refused = false;
    hwloc_topology_t topology = nullptr;
    if (hwloc_topology_init(&topology) != 0) {
        why = "hwloc_topology_init failed: " + errnoText(errno);
        return nullptr;
    }
    // The checked copy of the XML file, unless a variable of higher precedence is set (then hwloc
    // ignores HWLOC_XMLFILE anyway). A forced backend also keeps hwloc from opening the file
    // itself.
    if (xmlPath != nullptr && fsroot == nullptr && cpuid == nullptr && synthetic == nullptr) {
        // The size includes the terminating NUL, as hwloc's XML import expects.
        if (hwloc_topology_set_xmlbuffer(topology, xml.c_str(), static_cast<int>(xml.size() + 1)) !=
            0) {
            why = std::string("HWLOC_XMLFILE=") + xmlPath +
                  ": hwloc refused the XML: " + errnoText(errno);
            hwloc_topology_destroy(topology);
            return nullptr;
        }
    }
    if (io == IoObjects::Keep)
        hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (std::getenv("HWLOC_COMPONENTS") == nullptr)
        (void)hwloc_topology_set_components(topology, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                            "x86");
    if (hwloc_topology_load(topology) != 0) {
        why =
            "hwloc could not load the host topology: " + errnoText(errno) +
            (xmlPath != nullptr ? std::string(" (HWLOC_XMLFILE=") + xmlPath + ")" : std::string());
        hwloc_topology_destroy(topology);
        return nullptr;
    }
    return topology;
}

}  // namespace mtia::topology
