// Statements: text, {{ output }}, and the block tags chat templates use (if, for, set, macro,
// call, break, continue, and transformers' generation marker), as jinja2's parser.py reads them.
#include "chat/jinja_parser.hpp"

#include <algorithm>

namespace pagedserve::jinja {
namespace {

class statement_parser : public expression_parser {
 public:
  using expression_parser::expression_parser;

  result<body> run() {
    JINJA_TRY(body b, parse_body({}, nullptr));
    return b;
  }

 private:
  // Statements up to one of `ends` ({% endfor %} ...): the end tag's name goes to *found and the
  // tokens after it are left for the caller. No ends: up to the end of the template.
  result<body> parse_body(std::initializer_list<std::string_view> ends, std::string* found) {
    depth_guard g(depth_);
    JINJA_CHECK(check_depth());
    body out;
    while (true) {
      const token& t = cur();
      if (t.kind == token_kind::eof) {
        if (ends.size() == 0) return out;
        return error("unexpected end of template, expected " + expected(ends));
      }
      if (t.kind == token_kind::text) {
        out.push_back({t.line, text_stmt{t.text}});
        next();
      } else if (t.kind == token_kind::var_begin) {
        const int line = t.line;
        next();
        JINJA_TRY(expr_ptr e, parse_tuple(true));
        if (cur().kind != token_kind::var_end) return unexpected();
        next();
        out.push_back({line, output_stmt{std::move(e)}});
      } else if (t.kind == token_kind::block_begin) {
        next();
        if (cur().kind != token_kind::name) return error("expected a statement name, got '" + describe(cur()) + "'");
        const std::string& name = cur().text;
        if (std::find(ends.begin(), ends.end(), name) != ends.end()) {
          *found = name;
          next();
          return out;
        }
        if (!is_statement(name))
          return error("unknown tag '" + name + "'" + (ends.size() ? ", expected " + expected(ends) : ""));
        JINJA_CHECK(parse_statement(out));
      } else {
        return unexpected();
      }
    }
  }

  result<void> parse_statement(body& out) {
    const std::string name = cur().text;
    const int line = cur().line;
    next();
    if (name == "if") return parse_if(out, line);
    if (name == "for") return parse_for(out, line);
    if (name == "set") return parse_set(out, line);
    if (name == "macro") return parse_macro(out, line);
    if (name == "call") return parse_call_block(out, line);
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) return error("'" + name + "' outside of a loop");
      JINJA_CHECK(expect_block_end());
      out.push_back({line, loop_control_stmt{name == "break"}});
      return {};
    }
    if (name == "generation") {  // transformers' assistant-mask marker: renders its body unchanged
      JINJA_CHECK(expect_block_end());
      std::string found;
      JINJA_TRY(body inner, parse_body({"endgeneration"}, &found));
      JINJA_CHECK(expect_block_end());
      for (auto& s : inner) out.push_back(std::move(s));
      return {};
    }
    return fail("line " + std::to_string(line) + ": unknown tag '" + name + "'");
  }

  static bool is_statement(std::string_view name) {
    static constexpr std::string_view names[] = {"if",   "for",   "set",      "macro",
                                                 "call", "break", "continue", "generation"};
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
  }

  // "'elif' or 'else' or 'endif'"
  static std::string expected(std::initializer_list<std::string_view> ends) {
    std::string out;
    for (std::string_view e : ends) out += (out.empty() ? "'" : " or '") + std::string(e) + "'";
    return out;
  }

  result<void> parse_if(body& out, int line) {
    if_stmt s;
    std::string found = "if";
    while (found == "if" || found == "elif") {
      JINJA_TRY(expr_ptr cond, parse_expression(true));
      JINJA_CHECK(expect_block_end());
      JINJA_TRY(body b, parse_body({"elif", "else", "endif"}, &found));
      s.branches.emplace_back(std::move(cond), std::move(b));
    }
    if (found == "else") {
      JINJA_CHECK(expect_block_end());
      JINJA_TRY(s.otherwise, parse_body({"endif"}, &found));
    }
    JINJA_CHECK(expect_block_end());
    out.push_back({line, std::move(s)});
    return {};
  }

  // Names to assign: "x", "a, b" or "(a, b)".
  result<std::vector<std::string>> parse_targets() {
    const bool paren = skip_op("(");
    std::vector<std::string> names;
    do {
      if (paren && is_op(")")) break;
      JINJA_TRY(std::string n, expect_name());
      names.push_back(std::move(n));
    } while (skip_op(","));
    if (paren) JINJA_CHECK(expect_op(")"));
    return names;
  }

  result<void> parse_for(body& out, int line) {
    for_stmt s;
    JINJA_TRY(s.targets, parse_targets());
    if (!skip_name("in")) return error("expected 'in', got '" + describe(cur()) + "'");
    JINJA_TRY(s.iterable, parse_tuple(false));
    if (skip_name("if")) {
      JINJA_TRY(s.filter, parse_expression(true));
    }
    if (is_name("recursive")) return error("recursive for loops are not supported");
    JINJA_CHECK(expect_block_end());
    std::string found;
    ++loop_depth_;
    auto loop_body = parse_body({"else", "endfor"}, &found);
    --loop_depth_;
    if (!loop_body) return std::unexpected(loop_body.error());
    s.loop_body = std::move(*loop_body);
    if (found == "else") {
      JINJA_CHECK(expect_block_end());
      JINJA_TRY(s.otherwise, parse_body({"endfor"}, &found));
    }
    JINJA_CHECK(expect_block_end());
    out.push_back({line, std::move(s)});
    return {};
  }

  result<void> parse_set(body& out, int line) {
    set_stmt s;
    if (cur().kind == token_kind::name && peek().kind == token_kind::op && peek().text == ".") {
      s.targets.push_back(cur().text);
      next();
      next();
      JINJA_TRY(s.attr, expect_name());
    } else {
      JINJA_TRY(s.targets, parse_targets());
    }
    if (skip_op("=")) {
      JINJA_TRY(s.value, parse_tuple(true));
      JINJA_CHECK(expect_block_end());
    } else {
      JINJA_CHECK(expect_block_end());
      std::string found;
      JINJA_TRY(s.block, parse_body({"endset"}, &found));
      JINJA_CHECK(expect_block_end());
    }
    out.push_back({line, std::move(s)});
    return {};
  }

  result<void> parse_macro(body& out, int line) {
    macro_stmt s;
    JINJA_TRY(s.name, expect_name());
    JINJA_CHECK(expect_op("("));
    while (!is_op(")")) {
      macro_param p;
      JINJA_TRY(p.name, expect_name());
      if (skip_op("=")) {
        JINJA_TRY(p.default_value, parse_expression(true));
      }
      s.params.push_back(std::move(p));
      if (!skip_op(",")) break;
    }
    JINJA_CHECK(expect_op(")"));
    JINJA_CHECK(expect_block_end());
    std::string found;
    const int saved_loops = std::exchange(loop_depth_, 0);
    auto b = parse_body({"endmacro"}, &found);
    loop_depth_ = saved_loops;
    if (!b) return std::unexpected(b.error());
    s.macro_body = std::make_shared<const body>(std::move(*b));
    JINJA_CHECK(expect_block_end());
    out.push_back({line, std::move(s)});
    return {};
  }

  result<void> parse_call_block(body& out, int line) {
    call_block_stmt s;
    JINJA_TRY(s.call, parse_expression(true));
    if (!std::holds_alternative<call_expr>(s.call->node)) return error("expected a macro call after 'call'");
    JINJA_CHECK(expect_block_end());
    std::string found;
    const int saved_loops = std::exchange(loop_depth_, 0);
    auto b = parse_body({"endcall"}, &found);
    loop_depth_ = saved_loops;
    if (!b) return std::unexpected(b.error());
    s.caller_body = std::make_shared<const body>(std::move(*b));
    JINJA_CHECK(expect_block_end());
    out.push_back({line, std::move(s)});
    return {};
  }

  int loop_depth_ = 0;  // enclosing for loops, for break/continue
};

}  // namespace

result<body> parse(std::vector<token> tokens) { return statement_parser(std::move(tokens)).run(); }

}  // namespace pagedserve::jinja
