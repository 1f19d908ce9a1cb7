#pragma once
// The token cursor and expression grammar shared by the statement parser (jinja_parser.cpp) and
// the expression parser (jinja_expr_parser.cpp). Both count nesting in one depth so that blocks
// and expressions together stay within max_nesting: deep input is an error, never a stack overflow.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_ast.hpp"

namespace pagedserve::jinja {

// Nesting bound for blocks and expressions; one parenthesis costs about 10 (one per precedence
// level passed through), so expressions nest some 50 parentheses deep.
inline constexpr int max_nesting = 500;

// Tokens to expression trees, following jinja2's parser.py: the same operator precedence
// (or < and < not < comparisons < + - < ~ < * / // % < ** < unary minus < filters, tests and
// calls < attribute and subscript access), and jinja2's error wording where it helps.
class expression_parser {
 public:
  explicit expression_parser(std::vector<token> tokens) : toks_(std::move(tokens)) {}

 protected:
  // ---- the token cursor ----

  const token& cur() const { return toks_[pos_]; }
  const token& peek(std::size_t ahead = 1) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  void next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const { return cur().kind == token_kind::op && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().kind == token_kind::name && cur().text == n; }
  bool skip_op(std::string_view op) { return is_op(op) ? (next(), true) : false; }
  bool skip_name(std::string_view n) { return is_name(n) ? (next(), true) : false; }

  std::unexpected<std::string> error(const std::string& msg) const {
    return fail("line " + std::to_string(cur().line) + ": " + msg);
  }
  std::string describe(const token& t) const {
    switch (t.kind) {
      case token_kind::eof:
        return "end of template";
      case token_kind::var_end:
        return "end of print statement";
      case token_kind::block_end:
        return "end of statement block";
      case token_kind::string:
        return "string";
      case token_kind::text:
        return "template data";
      default:
        return t.text;
    }
  }
  std::unexpected<std::string> unexpected() const { return error("unexpected '" + describe(cur()) + "'"); }

  result<void> expect_op(std::string_view op) {
    if (!skip_op(op)) return error("expected '" + std::string(op) + "', got '" + describe(cur()) + "'");
    return {};
  }
  result<std::string> expect_name() {
    if (cur().kind != token_kind::name) return error("expected a name, got '" + describe(cur()) + "'");
    std::string n = cur().text;
    next();
    return n;
  }
  result<void> expect_block_end() {
    if (cur().kind != token_kind::block_end)
      return error("expected end of statement block, got '" + describe(cur()) + "'");
    next();
    return {};
  }

  // Bounds recursion: every nested expression or block passes through one of these.
  struct depth_guard {
    int& depth;
    explicit depth_guard(int& d) : depth(++d) {}
    ~depth_guard() { --depth; }
  };
  // A left-leaning chain (a.b.c, a + b + c, x|f|g) deepens the tree without recursing here;
  // each link counts as one level of nesting until the chain is complete.
  struct chain_guard {
    int& depth;
    int n = 0;
    explicit chain_guard(int& d) : depth(d) {}
    ~chain_guard() { depth -= n; }
    void link() { ++depth, ++n; }
  };
  result<void> check_depth() const {
    if (depth_ > max_nesting) return error("template nested too deeply");
    return {};
  }

  template <class T>
  expr_ptr make(int line, T node) {
    return std::make_unique<expr>(expr{line, std::move(node)});
  }

  // ---- expressions (jinja_expr_parser.cpp) ----

  // An expression, or several separated by commas (a tuple); with_condexpr false leaves a
  // trailing "if" alone (the filter of "for x in xs if cond").
  result<expr_ptr> parse_tuple(bool with_condexpr);
  result<expr_ptr> parse_expression(bool with_condexpr);

  int depth_ = 0;  // current nesting of blocks and expressions

 private:
  result<expr_ptr> parse_or();
  result<expr_ptr> parse_and();
  result<expr_ptr> parse_not();
  result<expr_ptr> parse_compare();
  result<expr_ptr> parse_math1();
  result<expr_ptr> parse_concat();
  result<expr_ptr> parse_math2();
  result<expr_ptr> parse_pow();
  result<expr_ptr> parse_unary_filtered();
  result<expr_ptr> parse_unary(bool with_filter);
  result<expr_ptr> parse_primary();
  result<expr_ptr> parse_postfix(expr_ptr e);
  result<expr_ptr> parse_subscript(expr_ptr object, int line);
  result<arg_exprs> parse_call_args();
  result<std::string> parse_dotted_name();
  result<expr_ptr> parse_filters(expr_ptr e);
  // One level of left-associative binary operators: sub(), then (op sub())*.
  using sub_parser = result<expr_ptr> (expression_parser::*)();
  result<expr_ptr> parse_binary(sub_parser sub, std::initializer_list<std::pair<std::string_view, binary_op>> ops);

  std::vector<token> toks_;
  std::size_t pos_ = 0;
};

}  // namespace pagedserve::jinja
