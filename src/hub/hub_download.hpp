#pragma once
// `--model org/name[:TAG]`: the hub repo's files pagedserve needs, downloaded into (or found in) the
// Hugging Face cache, and the local path to load: the snapshot folder, or the chosen .gguf in it.
// Like huggingface_hub's snapshot_download: GET /api/models/{repo}/revision/{rev}?blobs=true for
// the commit and the file list, refs/{rev} records the commit, each file comes through
// hub_file_download. Offline (HF_HUB_OFFLINE=1), or when the hub cannot be reached, the revision
// is resolved from the cache alone.
#include <expected>
#include <filesystem>
#include <string>

#include "download_progress.hpp"
#include "hub_file_select.hpp"
#include "hub_settings.hpp"

namespace pagedserve {

// True when `model` is meant for the hub: not an existing local path, and shaped like org/name[:TAG].
bool hub_model_wanted(const std::string& model);

std::expected<std::filesystem::path, std::string> hub_model_fetch(const hub_model_ref& ref, const std::string& revision,
                                                                   const hub_settings& settings,
                                                                   download_progress& progress);

// The program's entry: settings from the environment, progress on stderr.
std::expected<std::filesystem::path, std::string> hub_model_fetch(const std::string& model, const std::string& revision);

}  // namespace pagedserve
