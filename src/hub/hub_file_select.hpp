#pragma once
// Which files of a hub repo pagedserve needs: for safetensors weights the config, tokenizer,
// generation config, chat template and shards (never .bin/.pt/.h5/ONNX copies of the same weights);
// for a GGUF repo the one file of the requested quantization (or all the splits of one split model),
// chosen as llama-server's -hf does.
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedserve {

// One file of the repo as the hub's revision API lists it (siblings[] with ?blobs=true).
struct hub_file {
  std::string name;                    // rfilename: the path inside the repo
  std::optional<std::uint64_t> size;   // bytes of the file itself (the LFS object for LFS files)
  std::optional<std::string> sha256;   // lfs.sha256: LFS files only; it is also their ETag
  std::optional<std::string> blob_id;  // the git blob id: a regular file's ETag
  // The ETag the hub will answer with, when the listing says: what names the blob in the cache.
  std::optional<std::string> expected_etag() const { return sha256 ? sha256 : blob_id; }
};

// `org/name` or `org/name:TAG` (TAG picks a GGUF quantization, e.g. Q4_K_M).
struct hub_model_ref {
  std::string repo;  // "org/name"
  std::string tag;   // empty, or the quantization tag
};
// A hub repo id (no leading '/' or '.', exactly one '/', optional ":TAG"); nullopt for anything else.
std::optional<hub_model_ref> hub_model_ref_parse(std::string_view spec);

struct hub_selection {
  std::vector<hub_file> files;  // to fetch, in repo order
  std::string gguf;             // the chosen .gguf file (a split model's first), then the model path; empty for safetensors
};

// files: the repo's listing. An error names the repo and lists what it offers.
std::expected<hub_selection, std::string> hub_files_select(const std::vector<hub_file>& files, const hub_model_ref& ref);

}  // namespace pagedserve
