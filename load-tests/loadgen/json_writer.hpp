#pragma once
// A minimal streaming JSON writer for request bodies and result files: loadgen writes JSON in
// only a few shapes, and simdjson (which it reads with) does not write.
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "api/json_writer.hpp"

namespace pagedserve::loadgen {

// Strings are escaped by the server's own JSON writer, so requests and results agree with it byte for byte.
using pagedserve::json_append_string;

// A number as JSON: shortest round-trip form for doubles, null for NaN and infinities.
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Writes objects and arrays with commas placed for the caller. Keys and values are appended
// in the order given; nesting is tracked so every container gets its closing bracket.
class json_writer {
 public:
  json_writer& begin_object() { return open('{'); }
  json_writer& end_object() { return close('}'); }
  json_writer& begin_array() { return open('['); }
  json_writer& end_array() { return close(']'); }
  json_writer& key(std::string_view k) {
    comma();
    json_append_string(out_, k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  json_writer& value(std::string_view s) {
    comma();
    json_append_string(out_, s);
    return *this;
  }
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(double v) { return raw(json_number(v)); }
  json_writer& value(int v) { return raw(std::to_string(v)); }
  json_writer& value(long long v) { return raw(std::to_string(v)); }
  json_writer& value(bool v) { return raw(v ? "true" : "false"); }
  json_writer& null() { return raw("null"); }
  // An already-encoded JSON value.
  json_writer& raw(std::string_view json) {
    comma();
    out_ += json;
    return *this;
  }
  template <typename T>
  json_writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  json_writer& open(char c) {
    comma();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  json_writer& close(char c) {
    out_ += c;
    first_.pop_back();
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace pagedserve::loadgen
