// Runs statements (expressions are evaluated in jinja_eval.cpp) and owns the scopes.
// Scoping follows jinja2: each for-loop iteration and each macro call gets a fresh frame (a set
// inside a loop is gone after the iteration, which is why templates use namespace()), if blocks
// share their parent's frame, and a macro sees its arguments and the template's root variables
// but not its caller's locals. Every for-loop iteration and macro call is counted against the
// render limits, and output and every string or list built is checked against the size limit.
#include "chat/jinja_interp.hpp"

#include <algorithm>

namespace pagedserve::jinja {

interpreter::~interpreter() {
  for (const namespace_ptr& ns : namespaces_) ns->attrs.items.clear();
}

interpreter::interpreter(const chat_template_limits& limits, dict root, std::chrono::sys_seconds now)
    : limits_(limits), now_(now) {
  frames_.push_back(std::move(root.items));
}

result<std::string> interpreter::render(const body& b) {
  JINJA_CHECK(exec(b));
  return std::move(out_);
}

result<void> interpreter::check_size(std::size_t n) {
  if (n > limits_.max_output_bytes)
    return fail("value of " + std::to_string(n) + " bytes/items exceeds the limit of " +
                std::to_string(limits_.max_output_bytes));
  n_built_ += n;
  if (n_built_ > limits_.max_built_bytes)
    return fail("template built more than " + std::to_string(limits_.max_built_bytes) + " bytes/items in total");
  return {};
}

result<void> interpreter::write(std::string_view text) {
  if (out_.size() + text.size() > limits_.max_output_bytes)
    return fail("rendered output exceeds the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  out_ += text;
  return {};
}

result<std::string> interpreter::capture(const body& b) {
  std::string saved = std::exchange(out_, {});
  auto r = exec(b);
  std::string captured = std::exchange(out_, std::move(saved));
  if (!r) return std::unexpected(r.error());
  return captured;
}

value interpreter::lookup(std::string_view name) const {
  for (std::size_t k = frames_.size(); k-- > scope_base_;)
    for (const auto& [n, v] : frames_[k])
      if (n == name) return v;
  for (const auto& [n, v] : frames_[0])
    if (n == name) return v;
  return undefined_t{"'" + std::string(name) + "' is undefined"};
}

void interpreter::assign(std::string name, value v) {
  frame& f = frames_.back();
  for (auto& [n, old] : f)
    if (n == name) return void(old = std::move(v));
  f.emplace_back(std::move(name), std::move(v));
}

result<void> interpreter::bind_targets(const std::vector<std::string>& targets, const value& v) {
  if (targets.size() == 1) return assign(targets[0], v), result<void>{};
  JINJA_TRY(list items, iterate(v));
  if (items.size() != targets.size())
    return fail(std::string(items.size() > targets.size() ? "too many" : "not enough") +
                " values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                std::to_string(items.size()) + ")");
  for (std::size_t k = 0; k < targets.size(); ++k) assign(targets[k], std::move(items[k]));
  return {};
}

// ---- statements ---------------------------------------------------------------------------------

namespace {

// The `loop` variable of iteration i over items.
dict loop_object(const list& items, std::size_t i) {
  const auto n = static_cast<std::int64_t>(items.size()), k = static_cast<std::int64_t>(i);
  dict loop;
  loop.items = {{"index", k + 1},
                {"index0", k},
                {"revindex", n - k},
                {"revindex0", n - k - 1},
                {"first", k == 0},
                {"last", k == n - 1},
                {"length", n},
                {"depth", 1},
                {"depth0", 0},
                {"previtem", i > 0 ? items[i - 1] : value()},
                {"nextitem", k + 1 < n ? items[i + 1] : value()}};
  auto cycle = [i](interpreter&, call_args&& a) -> result<value> {
    if (a.positional.empty()) return fail("no items for cycling given");
    return a.positional[i % a.positional.size()];
  };
  loop.items.emplace_back("cycle", std::make_shared<const callable>(callable{"loop.cycle", cycle}));
  return loop;
}

}  // namespace

result<flow> interpreter::exec(const body& b) {
  for (const stmt& s : b) {
    JINJA_TRY(const flow f, exec_stmt(s));
    if (f != flow::normal) return f;
  }
  return flow::normal;
}

result<void> interpreter::enter() {
  if (eval_depth_ >= limits_.max_eval_depth)
    return fail("template evaluation nested deeper than " + std::to_string(limits_.max_eval_depth));
  if (++n_steps_ > limits_.max_render_steps)
    return fail("template rendering took more than " + std::to_string(limits_.max_render_steps) + " steps");
  ++eval_depth_;
  return {};
}

result<flow> interpreter::exec_stmt(const stmt& s) {
  auto r = [&]() -> result<flow> {
    JINJA_CHECK(enter());
    auto out = std::visit([&](const auto& n) { return exec_node(n); }, s.node);
    leave();
    return out;
  }();
  if (!r && !located_) {
    located_ = true;
    r.error() = "line " + std::to_string(s.line) + ": " + r.error();
  }
  return r;
}

result<flow> interpreter::exec_node(const text_stmt& s) {
  JINJA_CHECK(write(s.text));
  return flow::normal;
}

result<flow> interpreter::exec_node(const output_stmt& s) {
  JINJA_TRY(const value v, eval(*s.value));
  JINJA_CHECK(write(v.is_string() ? *v.get<std::string>() : to_str(v)));
  return flow::normal;
}

result<flow> interpreter::exec_node(const if_stmt& s) {
  for (const auto& [cond, branch] : s.branches) {
    JINJA_TRY(const value c, eval(*cond));
    if (truthy(c)) return exec(branch);
  }
  return exec(s.otherwise);
}

result<flow> interpreter::exec_node(const for_stmt& s) {
  JINJA_TRY(const value seq, eval(*s.iterable));
  JINJA_TRY(list items, iterate(seq));
  if (s.filter) {  // "for x in xs if cond": loop.length and loop.last count only kept items
    list kept;
    for (value& item : items) {
      frames_.emplace_back();
      auto bound = bind_targets(s.targets, item);
      auto keep = bound ? eval(*s.filter) : result<value>(std::unexpected(bound.error()));
      frames_.pop_back();
      if (!keep) return std::unexpected(keep.error());
      if (truthy(*keep)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec(s.otherwise);
  const auto n = static_cast<std::int64_t>(items.size());
  for (std::int64_t i = 0; i < n; ++i) {
    if (++n_iterations_ > limits_.max_loop_iterations)
      return fail("more than " + std::to_string(limits_.max_loop_iterations) + " loop iterations");
    frames_.emplace_back();
    auto r = [&]() -> result<flow> {
      JINJA_CHECK(bind_targets(s.targets, items[static_cast<std::size_t>(i)]));
      assign("loop", loop_object(items, static_cast<std::size_t>(i)));
      return exec(s.loop_body);
    }();
    frames_.pop_back();
    if (!r) return r;
    if (*r == flow::break_loop) break;
  }
  return flow::normal;
}

result<flow> interpreter::exec_node(const set_stmt& s) {
  if (!s.attr.empty()) {
    const value target = lookup(s.targets[0]);
    const auto* ns = target.get<namespace_ptr>();
    if (!ns) return fail("cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
    JINJA_TRY(value v, eval(*s.value));
    (*ns)->attrs.set(s.attr, std::move(v));
    return flow::normal;
  }
  value v;
  if (s.value) {
    JINJA_TRY(v, eval(*s.value));
  } else {
    JINJA_TRY(v, capture(s.block));
  }
  JINJA_CHECK(bind_targets(s.targets, v));
  return flow::normal;
}

result<flow> interpreter::exec_node(const macro_stmt& s) {
  const macro_stmt* m = &s;  // the program outlives every render of it
  auto fn = [m](interpreter& in, call_args&& a) { return in.call_macro(*m, std::move(a)); };
  assign(s.name, std::make_shared<const callable>(callable{s.name, fn}));
  return flow::normal;
}

result<value> interpreter::call_macro(const macro_stmt& m, call_args&& args) {
  if (call_depth_ >= limits_.max_call_depth)
    return fail("macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
  ++call_depth_;
  const std::size_t saved_base = scope_base_;
  frames_.emplace_back();
  scope_base_ = frames_.size() - 1;
  auto r = [&]() -> result<value> {
    list varargs;
    varargs.is_tuple = true;
    for (std::size_t k = m.params.size(); k < args.positional.size(); ++k) varargs.push_back(args.positional[k]);
    for (std::size_t k = 0; k < m.params.size(); ++k) {
      const macro_param& p = m.params[k];
      value v = undefined_t{"'" + p.name + "' is undefined"};
      const auto kw =
          std::find_if(args.keyword.begin(), args.keyword.end(), [&](auto& a) { return a.first == p.name; });
      if (k < args.positional.size()) {
        v = std::move(args.positional[k]);
      } else if (kw != args.keyword.end()) {
        v = std::move(kw->second);
        args.keyword.erase(kw);
      } else if (p.default_value) {
        JINJA_TRY(v, eval(*p.default_value));
      }
      assign(p.name, std::move(v));
    }
    dict kwargs;
    for (auto& [k, v] : args.keyword) {
      if (k == "caller")
        assign("caller", std::move(v));
      else
        kwargs.set(k, std::move(v));
    }
    assign("varargs", std::move(varargs));
    assign("kwargs", std::move(kwargs));
    JINJA_TRY(std::string text, capture(*m.macro_body));
    return value(std::move(text));
  }();
  frames_.pop_back();
  scope_base_ = saved_base;
  --call_depth_;
  return r;
}

result<flow> interpreter::exec_node(const call_block_stmt& s) {
  const auto& c = std::get<call_expr>(s.call->node);
  JINJA_TRY(const value callee, eval(*c.callee));
  JINJA_TRY(call_args args, eval_args(c.args));
  // caller() renders the block with the variables visible here, snapshotted as its closure.
  frame closure;
  for (std::size_t k = scope_base_; k < frames_.size(); ++k)
    for (const auto& [n, v] : frames_[k]) closure.emplace_back(n, v);
  auto caller = [body = s.caller_body, closure](interpreter& in, call_args&&) -> result<value> {
    const std::size_t saved_base = in.scope_base_;
    in.frames_.push_back(closure);
    in.scope_base_ = in.frames_.size() - 1;
    auto text = in.capture(*body);
    in.frames_.pop_back();
    in.scope_base_ = saved_base;
    if (!text) return std::unexpected(text.error());
    return value(std::move(*text));
  };
  args.keyword.emplace_back("caller", std::make_shared<const callable>(callable{"caller", caller}));
  JINJA_TRY(const value out, call(callee, std::move(args)));
  JINJA_CHECK(write(to_str(out)));
  return flow::normal;
}

result<flow> interpreter::exec_node(const loop_control_stmt& s) {
  return s.is_break ? flow::break_loop : flow::continue_loop;
}

result<value> interpreter::call(const value& callee, call_args&& args) {
  if (callee.is_undefined()) return undefined_error(callee);
  const auto* c = callee.get<callable_ptr>();
  if (!c) return fail("'" + std::string(type_name(callee)) + "' object is not callable");
  return (*c)->fn(*this, std::move(args));
}

std::unexpected<std::string> undefined_error(const value& v) {
  const auto* u = v.get<undefined_t>();
  return fail(u && !u->hint.empty() ? u->hint : "undefined value");
}

}  // namespace pagedserve::jinja
