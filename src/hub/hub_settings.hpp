#pragma once
// Where and how the hub is reached, read once from huggingface_hub's environment variables so a
// machine set up for it (a token, a mirror, an offline cache) works the same for pagedserve.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

namespace pagedserve {

struct hub_settings {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT (a mirror, or a test's hub on 127.0.0.1)
  std::filesystem::path cache_dir;                  // HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
  std::string token;                                // HF_TOKEN, else the file $HF_TOKEN_PATH or $HF_HOME/token; empty = none
  bool offline = false;                             // HF_HUB_OFFLINE=1: never touch the network, use the cache
  std::chrono::seconds connect_timeout{10};         // per TCP (and TLS) connection
  std::chrono::seconds read_timeout{60};            // without a byte from the server, a transfer fails
};

// An environment lookup: name -> value, or nullptr when unset (std::getenv in the program).
using env_lookup = std::function<const char*(const char*)>;

hub_settings hub_settings_from_env(const env_lookup& env);
hub_settings hub_settings_from_env();  // the process environment

}  // namespace pagedserve
