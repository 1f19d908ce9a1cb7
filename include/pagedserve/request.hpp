#pragma once
// What every layer agrees a request is: how it ends and what it used.
#include <string_view>

namespace pagedserve {

enum class finish_reason { stop, length, cancelled, error };

constexpr std::string_view finish_reason_name(finish_reason r) {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "cancelled";
    case finish_reason::error: return "error";
  }
  return "error";
}

struct usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

}  // namespace pagedserve
