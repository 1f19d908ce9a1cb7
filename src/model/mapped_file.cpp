#include "model/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

namespace pagedserve {

std::expected<mapped_file, std::string> mapped_file::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::unexpected(path.string() + ": not a regular file");
  }
  mapped_file f;
  f.size_ = static_cast<std::size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return std::unexpected(path.string() + ": mmap failed: " + std::strerror(err));
    }
    f.data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
  return f;
}

void prefault_pages(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(bytes.data()) / page * page;
  const auto last = reinterpret_cast<std::uintptr_t>(bytes.data() + bytes.size());
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_READ) == 0) return;
  // Older kernels: one read per page.
  std::uint8_t sum = 0;
  for (std::uintptr_t p = std::max(first, reinterpret_cast<std::uintptr_t>(bytes.data())); p < last; p += page)
    sum ^= *reinterpret_cast<const volatile std::uint8_t*>(p);
  static_cast<void>(sum);
}

mapped_file::mapped_file(mapped_file&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

mapped_file& mapped_file::operator=(mapped_file&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

mapped_file::~mapped_file() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

void release_pages(std::span<const std::byte> bytes) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto first = (reinterpret_cast<std::uintptr_t>(bytes.data()) + page - 1) / page * page;
  const auto last = reinterpret_cast<std::uintptr_t>(bytes.data() + bytes.size()) / page * page;
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

std::shared_ptr<std::byte> huge_page_buffer(std::size_t bytes) {
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t size = std::max<std::size_t>(1, (bytes + huge - 1) / huge) * huge;
  // One huge page more than needed, so the start can be moved to a 2 MiB boundary.
  void* p = ::mmap(nullptr, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto raw = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t start = (raw + huge - 1) / huge * huge;
  if (start > raw) ::munmap(p, start - raw);
  if (const std::uintptr_t end = raw + size + huge; end > start + size) ::munmap(reinterpret_cast<void*>(start + size), end - start - size);
#ifdef MADV_HUGEPAGE
  ::madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);  // a hint: 4 KiB pages where refused
#endif
  return {reinterpret_cast<std::byte*>(start), [size](std::byte* q) { ::munmap(q, size); }};
}

}  // namespace pagedserve
