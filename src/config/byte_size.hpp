#pragma once
// Memory sizes as users write them ("4GiB", "512MB", "1.5G"): for --kv-cache-memory and its config key.
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace pagedserve {

// A size in bytes: a number (fractions allowed) and an optional unit, case-insensitive: B, KiB/MiB/GiB/TiB
// (powers of 1024), KB/MB/GB/TB (powers of 1000), K/M/G/T (1024, as llama.cpp and free -h mean them).
// An error says what is wrong.
std::expected<std::uint64_t, std::string> byte_size_parse(std::string_view text);

}  // namespace pagedserve
