#include "config/byte_size.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace pagedserve {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::expected<std::uint64_t, std::string> byte_size_parse(std::string_view text) {
  const auto bad = [&] {
    return std::unexpected("'" + std::string(text) + "' is not a size (e.g. 4GiB, 512MiB, 2GB, 1.5G)");
  };
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || !std::isfinite(number) || number < 0) return bad();
  std::string unit = lower(std::string_view(end, text.data() + text.size() - end));
  if (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  constexpr double ki = 1024, k = 1000;
  static const std::array<std::pair<const char*, double>, 14> units{{{"", 1},
                                                                     {"b", 1},
                                                                     {"kib", ki},
                                                                     {"mib", ki * ki},
                                                                     {"gib", ki * ki * ki},
                                                                     {"tib", ki * ki * ki * ki},
                                                                     {"kb", k},
                                                                     {"mb", k * k},
                                                                     {"gb", k * k * k},
                                                                     {"tb", k * k * k * k},
                                                                     {"k", ki},
                                                                     {"m", ki * ki},
                                                                     {"g", ki * ki * ki},
                                                                     {"t", ki * ki * ki * ki}}};
  for (const auto& [name, scale] : units)
    if (unit == name) {
      const double bytes = number * scale;
      if (bytes >= 1.8e19) return bad();
      return static_cast<std::uint64_t>(bytes);
    }
  return bad();
}

}  // namespace pagedserve
