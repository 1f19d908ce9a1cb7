#pragma once
// The evaluator of a parsed template, and the builtin filters, tests, methods and global functions
// it dispatches to. One interpreter renders one template once; it enforces the render limits.
#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_ast.hpp"
#include "chat/chat_template.hpp"

namespace pagedserve::jinja {

// How a statement list ended: normally, or by {% break %} / {% continue %}.
enum class flow { normal, break_loop, continue_loop };

class interpreter {
 public:
  // `root` holds the template's variables (context and globals); top-level sets add to it.
  interpreter(const chat_template_limits& limits, dict root, std::chrono::sys_seconds now);
  // Empties every namespace the render made: one that holds itself (`{% set ns.k = ns %}`), directly or
  // through lists and dicts, is a shared_ptr cycle that would otherwise outlive the render.
  ~interpreter();
  interpreter(const interpreter&) = delete;
  interpreter& operator=(const interpreter&) = delete;
  // A namespace() the render made, emptied with the interpreter.
  void own(const namespace_ptr& ns) { namespaces_.push_back(ns); }

  result<std::string> render(const body& b);
  result<value> call(const value& callee, call_args&& args);
  // Error unless a string or list of this many bytes/items stays within the limits, the render's
  // total built so far included (each call adds n to it).
  result<void> check_size(std::size_t n);
  const chat_template_limits& limits() const { return limits_; }
  std::chrono::sys_seconds now() const { return now_; }

 private:
  using frame = std::vector<std::pair<std::string, value>>;
  std::vector<namespace_ptr> namespaces_;

  result<flow> exec(const body& b);
  result<flow> exec_stmt(const stmt& s);
  result<flow> exec_node(const text_stmt& s);
  result<flow> exec_node(const output_stmt& s);
  result<flow> exec_node(const if_stmt& s);
  result<flow> exec_node(const for_stmt& s);
  result<flow> exec_node(const set_stmt& s);
  result<flow> exec_node(const macro_stmt& s);
  result<flow> exec_node(const call_block_stmt& s);
  result<flow> exec_node(const loop_control_stmt& s);
  result<void> write(std::string_view text);
  // Runs b with a fresh output buffer and returns what it wrote (block set, macro body).
  result<std::string> capture(const body& b);

  result<value> eval(const expr& e);
  result<value> eval_node(const literal_expr& e);
  result<value> eval_node(const name_expr& e);
  result<value> eval_node(const list_expr& e);
  result<value> eval_node(const dict_expr& e);
  result<value> eval_node(const attr_expr& e);
  result<value> eval_node(const item_expr& e);
  result<value> eval_node(const slice_expr& e);
  result<value> eval_node(const unary_expr& e);
  result<value> eval_node(const binary_expr& e);
  result<value> eval_node(const compare_expr& e);
  result<value> eval_node(const cond_expr& e);
  result<value> eval_node(const filter_expr& e);
  result<value> eval_node(const test_expr& e);
  result<value> eval_node(const call_expr& e);
  result<call_args> eval_args(const arg_exprs& a);

  value lookup(std::string_view name) const;
  void assign(std::string name, value v);
  result<void> bind_targets(const std::vector<std::string>& targets, const value& v);
  result<value> call_macro(const macro_stmt& m, call_args&& args);
  result<void> enter();  // counts one more level of evaluation; leave() undoes it
  void leave() { --eval_depth_; }

  const chat_template_limits& limits_;
  std::chrono::sys_seconds now_;
  std::vector<frame> frames_;   // frames_[0] is the template's root scope
  std::size_t scope_base_ = 1;  // lookups see frames_[scope_base_..] and the root (a macro sees no caller locals)
  std::string out_;
  std::int64_t n_iterations_ = 0;
  std::int64_t n_steps_ = 0;       // enter() calls over the whole render, bounded by limits_.max_render_steps
  std::uint64_t n_built_ = 0;      // bytes/items check_size approved, bounded by limits_.max_built_bytes
  int call_depth_ = 0;
  int eval_depth_ = 0;    // nested exec_stmt/eval calls, bounded by limits_.max_eval_depth
  bool located_ = false;  // the error being returned already names its line
};

// ---- builtins -----------------------------------------------------------------------------------

using filter_fn = result<value> (*)(interpreter&, const value& operand, call_args&& args);
using test_fn = result<bool> (*)(interpreter&, const value& operand, call_args&& args);

const filter_fn* filter_find(std::string_view name);  // jinja_filters.cpp
const test_fn* test_find(std::string_view name);      // jinja_tests.cpp

// obj.name as jinja2 resolves it: a method bound to obj (str and dict methods), a dict key, a
// namespace attribute, or undefined. Undefined obj is an error.
result<value> attr_get(const value& obj, std::string_view name);  // jinja_methods.cpp
// obj[key]: list and string indexes (negative from the end), dict keys, else attr_get.
result<value> item_get(const value& obj, const value& key);
// range, namespace, dict, raise_exception, strftime_now, joiner-free globals of transformers.
void globals_add(dict& root);

// Binds args to the parameter `names` in order (positional, then by keyword); the first
// n_required must be given. Missing optional ones are undefined.
result<std::vector<value>> args_bind(call_args&& args, std::span<const std::string_view> names, std::size_t n_required,
                                     std::string_view fn_name);
// An int argument (bools count, as in Python) or, when undefined, the fallback.
result<std::int64_t> arg_int(const value& v, std::int64_t fallback, std::string_view what);
// Error for using an undefined value: "'x' is undefined" or what the lookup recorded.
std::unexpected<std::string> undefined_error(const value& v);

}  // namespace pagedserve::jinja
