#pragma once
// A read-only memory map of a whole file: model weights and vocabularies are used in place, never copied.
#include <cstddef>
#include <expected>
#include <filesystem>
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

}  // namespace pagedserve
