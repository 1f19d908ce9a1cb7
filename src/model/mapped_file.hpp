#pragma once
// A read-only memory map of a whole file: model weights and vocabularies are used in place, never copied.
#include <cstddef>
#include <expected>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace pagedserve {

class mapped_file {
 public:
  static std::expected<mapped_file, std::string> open(const std::filesystem::path& path);
  mapped_file() = default;
  mapped_file(mapped_file&& other) noexcept;
  mapped_file& operator=(mapped_file&& other) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Reads every page of `bytes` (inside a mapping) into memory now, as llama.cpp's MAP_POPULATE does, so the
// first requests do not pay a page fault per 4 KiB of weights: an MoE model touches new experts' pages
// token after token (measured: the Qwen3-30B-A3B-shaped file decoded at a fraction of its speed until
// every expert had been touched).
void prefault_pages(std::span<const std::byte> bytes);

// Drops this process's mapping of the pages lying wholly inside `bytes` (a read-only file mapping:
// nothing is lost, a later read faults them back in): for tensors a copy has replaced (row panels), so
// the file's bytes and the copy are not both resident.
void release_pages(std::span<const std::byte> bytes);

// `bytes` of zeroed anonymous memory on 2 MiB-aligned transparent huge pages where the kernel grants
// them (MADV_HUGEPAGE before the first touch: THP is "madvise" on Debian): weights streamed at tens of
// GB/s cross a 4 KiB page every few hundred nanoseconds, each a TLB miss and a stop of the hardware
// prefetcher. Unmapped when the last owner goes; throws std::bad_alloc when mmap fails.
std::shared_ptr<std::byte> huge_page_buffer(std::size_t bytes);

}  // namespace pagedserve
