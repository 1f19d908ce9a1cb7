#pragma once
// Tensors of a Hugging Face safetensors set looked up by name and turned into weight views (or fp32
// vectors), with errors that name the tensor and the architecture that needs it. Remembers every name
// it handed out, so a loader can refuse tensors it does not know.
#include <expected>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pagedserve/model.hpp"
#include "model/safetensors.hpp"

namespace pagedserve::hf {

class tensor_source {
 public:
  tensor_source(const safetensors_set& set, model& m) : set_(set), m_(m) {}

  // A [rows, cols] matrix, viewed in place (copied only when misaligned).
  std::expected<weight, std::string> matrix(const std::string& name, int rows, int cols);
  // Columns [col0, col0 + rows) of a [cols, n_cols] matrix, transposed into an owned [rows, cols]
  // matrix of the same dtype (exact): GPT-2's Conv1D weights are stored [in, out].
  std::expected<weight, std::string> matrix_transposed(const std::string& name, int n_cols, int col0, int rows,
                                                       int cols);
  // Rows [row0, row0 + rows) of matrix `index` of a [count, total_rows, cols] tensor (transformers 5's
  // fused MoE experts), viewed in place.
  std::expected<weight, std::string> stacked_matrix(const std::string& name, int count, int total_rows, int cols,
                                                    int index, int row0, int rows);
  // A norm weight or bias, copied to fp32.
  std::expected<const float*, std::string> vector(const std::string& name, int n);

  bool has(const std::string& name) const { return set_.find(name) != nullptr; }
  // Every tensor of the set that no call above asked for, in file order.
  std::vector<std::string> unused() const;

 private:
  std::expected<const safetensors_tensor*, std::string> find(const std::string& name,
                                                             const std::vector<std::int64_t>& shape);
  // The tensor's bytes, copied once when not aligned to its element size (legal in the format, rare).
  const std::byte* aligned_data(const safetensors_tensor& t);

  const safetensors_set& set_;
  model& m_;
  std::set<std::string> used_;
  std::map<std::string, const std::byte*> copies_;
};

}  // namespace pagedserve::hf
