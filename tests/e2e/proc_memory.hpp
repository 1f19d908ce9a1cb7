#pragma once
// A process's memory as the kernel counts it (/proc/PID/status), for tests that bound what a hostile
// client can make the server hold.
#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace pagedserve::e2e {

// The field's value in bytes ("VmRSS", or "VmHWM": the peak resident set so far); 0 if unreadable.
inline std::uint64_t proc_status_bytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;  // "  1234 kB"
  return 0;
}

inline double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace pagedserve::e2e
