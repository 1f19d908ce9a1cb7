#pragma once
// Fetches one file of a repo at a commit into the cache, as huggingface_hub's hf_hub_download does:
// GET {endpoint}/{repo}/resolve/{commit}/{file} through its redirects, the blob named by the
// X-Linked-Etag/ETag the hub answers with, written to blobs/{etag}.incomplete (resumed with a Range
// request when one is there), checked against the expected size and, for LFS files, SHA-256, then
// renamed into place and linked from snapshots/{commit}/{file}.
#include <expected>
#include <string>

#include "download_progress.hpp"
#include "hub_cache.hpp"
#include "hub_client.hpp"
#include "hub_file_select.hpp"
#include "hub_settings.hpp"

namespace pagedserve {

// Headers every hub request carries: the token (when there is one), no compression (sizes must be
// the files' own), and who is asking.
hub_headers hub_request_headers(const hub_settings& s);
hub_http_options hub_http_options_from(const hub_settings& s);

// What an HTTP error status means for the user: 401/403 say how to give a token, 404 names what was
// not found (the hub's X-Error-Code tells a missing repo from a missing revision or file).
std::string hub_status_message(const hub_http_hop& hop, const std::string& what, const hub_settings& s,
                               const std::string& body);

std::expected<void, std::string> hub_file_download(const hub_cache& cache, const hub_settings& s,
                                                   const std::string& repo, const std::string& commit,
                                                   const hub_file& file, download_progress& progress);

}  // namespace pagedserve
