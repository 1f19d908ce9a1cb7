#include "grammar/integer_range.hpp"

#include <algorithm>
#include <vector>

namespace pagedserve::grammar {

namespace {

constexpr int max_digits = 16;
constexpr long long max_value = 9'999'999'999'999'999LL;  // 16 digits

std::string digit_class(char from, char to) {
  if (from == to) return std::string("\"") + from + "\"";
  return std::string("[") + from + "-" + to + "]";
}

std::string any_digits(std::size_t n) { return n == 0 ? "" : " [0-9]{" + std::to_string(n) + "}"; }

std::string join(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (std::size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return s + ")";
}

// Digit strings of s's length that are >= s (or <= s).
std::string at_least(const std::string& s) {
  if (s.empty()) return "\"\"";
  std::vector<std::string> alts{digit_class(s[0], s[0]) + " " + at_least(s.substr(1))};
  if (s[0] < '9') alts.push_back(digit_class(static_cast<char>(s[0] + 1), '9') + any_digits(s.size() - 1));
  return join(alts);
}

std::string at_most(const std::string& s) {
  if (s.empty()) return "\"\"";
  std::vector<std::string> alts{digit_class(s[0], s[0]) + " " + at_most(s.substr(1))};
  if (s[0] > '0') alts.push_back(digit_class('0', static_cast<char>(s[0] - 1)) + any_digits(s.size() - 1));
  return join(alts);
}

// Digit strings of equal length n with s <= x <= t.
std::string between(const std::string& s, const std::string& t) {
  if (s.empty()) return "\"\"";
  if (s[0] == t[0]) return digit_class(s[0], s[0]) + " " + between(s.substr(1), t.substr(1));
  std::vector<std::string> alts{digit_class(s[0], s[0]) + " " + at_least(s.substr(1))};
  if (t[0] - s[0] > 1)
    alts.push_back(digit_class(static_cast<char>(s[0] + 1), static_cast<char>(t[0] - 1)) + any_digits(s.size() - 1));
  alts.push_back(digit_class(t[0], t[0]) + " " + at_most(t.substr(1)));
  return join(alts);
}

long long power_of_ten(std::size_t n) {
  long long p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Non-negative integers in [a, b] (b absent: up to 16 digits).
std::string non_negative(long long a, std::optional<long long> b) {
  const long long top = b.value_or(max_value);
  const std::size_t la = std::to_string(a).size(), lb = std::to_string(top).size();
  std::vector<std::string> alts;
  for (std::size_t len = la; len <= lb; ++len) {
    const long long lo = len == la ? a : power_of_ten(len - 1);
    const long long hi = len == lb ? top : power_of_ten(len) - 1;
    alts.push_back(between(std::to_string(lo), std::to_string(hi)));
  }
  return join(alts);
}

}  // namespace

std::expected<std::string, std::string> integer_range_gbnf(std::optional<long long> lo, std::optional<long long> hi) {
  if (lo && hi && *lo > *hi) return std::unexpected("'minimum' is above 'maximum'");
  if ((lo && (*lo > max_value || *lo < -max_value)) || (hi && (*hi > max_value || *hi < -max_value)))
    return std::unexpected("integer bounds beyond " + std::to_string(max_digits) + " digits are not supported");
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {  // negative values: "-" and their magnitudes
    const long long smallest = hi && *hi < 0 ? -*hi : 1;
    alts.push_back("\"-\" " + non_negative(smallest, lo ? std::optional(-*lo) : std::nullopt));
  }
  if (!hi || *hi >= 0) alts.push_back(non_negative(lo ? std::max(0LL, *lo) : 0, hi));
  return join(alts);
}

}  // namespace pagedserve::grammar
