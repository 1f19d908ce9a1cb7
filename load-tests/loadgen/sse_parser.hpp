#pragma once
// Splits a text/event-stream body into events, as bytes arrive in arbitrary pieces: "data:" lines
// are joined, ":" comment lines (keep-alive pings) and other fields are ignored, "\r\n" is accepted.
#include <string>
#include <string_view>

namespace pagedserve::loadgen {

class sse_parser {
 public:
  // Feeds the next bytes; calls on_data(payload) for every event completed by them.
  template <typename F>
  void feed(std::string_view bytes, F&& on_data) {
    pending_.append(bytes);
    std::size_t begin = 0;
    for (std::size_t nl; (nl = pending_.find('\n', begin)) != std::string::npos; begin = nl + 1) {
      std::string_view line(pending_.data() + begin, nl - begin);
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (line.empty()) {
        if (has_data_) on_data(std::string_view(data_));
        data_.clear();
        has_data_ = false;
      } else if (line.starts_with("data:")) {
        line.remove_prefix(5);
        if (line.starts_with(' ')) line.remove_prefix(1);
        if (has_data_) data_ += '\n';
        data_.append(line);
        has_data_ = true;
      }
    }
    pending_.erase(0, begin);
  }
  // The stream ended: an event not closed by a blank line still counts.
  template <typename F>
  void finish(F&& on_data) {
    if (!pending_.empty()) feed("\n", on_data);
    if (has_data_) on_data(std::string_view(data_));
    data_.clear();
    has_data_ = false;
  }

 private:
  std::string pending_;  // bytes after the last complete line
  std::string data_;     // data of the event being read
  bool has_data_ = false;
};

}  // namespace pagedserve::loadgen
