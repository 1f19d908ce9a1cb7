#include "hub/hub_settings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace pagedserve {
namespace {

std::string value(const env_lookup& env, const char* name) {
  const char* v = env(name);
  return v ? std::string(v) : std::string();
}

// huggingface_hub's truthy spellings: 1, ON, YES, TRUE (any case).
bool truthy(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

std::string trimmed_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto first = s.find_first_not_of(" \t\r\n"), last = s.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

}  // namespace

hub_settings hub_settings_from_env(const env_lookup& env) {
  hub_settings s;
  if (auto e = value(env, "HF_ENDPOINT"); !e.empty()) {
    while (e.ends_with('/')) e.pop_back();
    s.endpoint = e;
  }
  std::filesystem::path home;
  if (auto h = value(env, "HF_HOME"); !h.empty()) home = h;
  else if (auto x = value(env, "XDG_CACHE_HOME"); !x.empty()) home = std::filesystem::path(x) / "huggingface";
  else home = std::filesystem::path(value(env, "HOME")) / ".cache" / "huggingface";
  if (auto c = value(env, "HF_HUB_CACHE"); !c.empty()) s.cache_dir = c;
  else if (auto c2 = value(env, "HUGGINGFACE_HUB_CACHE"); !c2.empty()) s.cache_dir = c2;  // its older name
  else s.cache_dir = home / "hub";
  s.token = value(env, "HF_TOKEN");
  if (s.token.empty()) s.token = value(env, "HUGGING_FACE_HUB_TOKEN");  // its older name
  if (s.token.empty()) {
    const auto path = value(env, "HF_TOKEN_PATH");
    s.token = trimmed_file(path.empty() ? home / "token" : std::filesystem::path(path));
  }
  s.offline = truthy(value(env, "HF_HUB_OFFLINE"));
  return s;
}

hub_settings hub_settings_from_env() {
  return hub_settings_from_env([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace pagedserve
