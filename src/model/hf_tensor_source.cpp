#include "model/hf_tensor_source.hpp"

#include <cstring>

namespace pagedserve::hf {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::expected<weight, std::string> tensor_source::matrix(const std::string& name, int rows, int cols) {
  auto t = find(name, {rows, cols});
  if (!t) return std::unexpected(t.error());
  return weight{aligned_data(**t), *(*t)->type, rows, cols};
}

std::expected<weight, std::string> tensor_source::stacked_matrix(const std::string& name, int count, int total_rows,
                                                                 int cols, int index, int row0, int rows) {
  auto t = find(name, {count, total_rows, cols});
  if (!t) return std::unexpected(t.error());
  const std::size_t offset = (static_cast<std::size_t>(index) * total_rows + row0) * cols * dtype_size(*(*t)->type);
  return weight{aligned_data(**t) + offset, *(*t)->type, rows, cols};
}

const std::byte* tensor_source::aligned_data(const safetensors_tensor& t) {
  if (reinterpret_cast<std::uintptr_t>(t.data) % dtype_size(*t.type) == 0) return t.data;
  const std::byte*& copy = copies_[t.name];
  if (!copy) {
    std::byte* bytes = m_.keep(std::vector<std::byte>(t.n_bytes));
    std::memcpy(bytes, t.data, t.n_bytes);
    copy = bytes;
  }
  return copy;
}

std::expected<weight, std::string> tensor_source::matrix_transposed(const std::string& name, int n_cols, int col0,
                                                                    int rows, int cols) {
  auto t = find(name, {cols, n_cols});
  if (!t) return std::unexpected(t.error());
  const safetensors_tensor& st = **t;
  const std::size_t es = dtype_size(*st.type);
  std::byte* out = m_.keep(std::vector<std::byte>(static_cast<std::size_t>(rows) * cols * es));
  // Element (i, col0 + o) of the stored [cols, n_cols] matrix becomes element (o, i); byte copies, so
  // bf16 and fp16 stay bit-exact (and no alignment is assumed).
  for (int o = 0; o < rows; ++o)
    for (int i = 0; i < cols; ++i)
      std::memcpy(out + (static_cast<std::size_t>(o) * cols + i) * es,
                  st.data + (static_cast<std::size_t>(i) * n_cols + col0 + o) * es, es);
  return weight{out, *st.type, rows, cols};
}

std::expected<const float*, std::string> tensor_source::vector(const std::string& name, int n) {
  auto t = find(name, {n});
  if (!t) return std::unexpected(t.error());
  std::vector<float> v(n);
  const std::byte* p = (*t)->data;
  for (int i = 0; i < n; ++i) {
    if (*(*t)->type == dtype::f32) {
      std::memcpy(&v[i], p + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      v[i] = *(*t)->type == dtype::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
  return m_.keep(std::move(v));
}

std::vector<std::string> tensor_source::unused() const {
  std::vector<std::string> out;
  for (const safetensors_file& f : set_.files())
    for (const safetensors_tensor& t : f.tensors())
      if (!used_.contains(t.name)) out.push_back(t.name);
  return out;
}

std::expected<const safetensors_tensor*, std::string> tensor_source::find(const std::string& name,
                                                                          const std::vector<std::int64_t>& shape) {
  const safetensors_tensor* t = set_.find(name);
  if (!t) return std::unexpected("missing tensor '" + name + "' (" + m_.config.architecture + " needs it)");
  if (!t->type) return std::unexpected("tensor '" + name + "' has dtype " + t->dtype_name + "; expected F32, BF16 or F16");
  if (t->shape != shape)
    return std::unexpected("tensor '" + name + "' has shape " + shape_text(t->shape) + ", expected " + shape_text(shape));
  used_.insert(name);
  return t;
}

}  // namespace pagedserve::hf
