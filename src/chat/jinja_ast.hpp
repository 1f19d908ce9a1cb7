#pragma once
// Tokens and syntax tree of the Jinja subset chat templates use. The lexer applies jinja2's
// whitespace rules (trim_blocks, lstrip_blocks, "-" and "+" markers) so text nodes hold exactly
// the bytes that get written; the parser follows jinja2's grammar and operator precedence.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "chat/jinja_value.hpp"

namespace pagedserve::jinja {

// ---- tokens (jinja_lexer.cpp) ---------------------------------------------------------------------

enum class token_kind { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct token {
  token_kind kind;
  std::string text;  // text, name, operator, or the decoded string literal
  int line = 1;      // 1-based line of the token's first character
  std::int64_t int_value = 0;
  double float_value = 0;
};

// Splits a template into text and tag tokens; unterminated tags and bad literals are errors.
result<std::vector<token>> lex(std::string_view source);

// ---- expressions --------------------------------------------------------------------------------

struct expr;
using expr_ptr = std::unique_ptr<expr>;

struct arg_exprs {
  std::vector<expr_ptr> positional;
  std::vector<std::pair<std::string, expr_ptr>> keyword;
};

enum class binary_op { add, sub, mul, div, floordiv, mod, pow, concat, and_, or_ };
enum class compare_op { eq, ne, lt, le, gt, ge, in, not_in };
enum class unary_op { not_, neg, pos };

// clang-format off
struct literal_expr { value v; };
struct name_expr { std::string name; };
struct list_expr { std::vector<expr_ptr> items; bool is_tuple = false; };
struct dict_expr { std::vector<std::pair<expr_ptr, expr_ptr>> items; };
struct attr_expr { expr_ptr object; std::string name; };       // a.name
struct item_expr { expr_ptr object; expr_ptr index; };         // a[i]
struct slice_expr { expr_ptr object, start, stop, step; };     // a[start:stop:step]; parts may be null
struct unary_expr { unary_op op; expr_ptr operand; };
struct binary_expr { binary_op op; expr_ptr lhs, rhs; };
struct compare_expr { expr_ptr first; std::vector<std::pair<compare_op, expr_ptr>> rest; };  // a < b < c
struct cond_expr { expr_ptr cond, then, otherwise; };          // then if cond else otherwise (may be null)
struct filter_expr { expr_ptr operand; std::string name; arg_exprs args; };  // operand | name(args)
struct test_expr { expr_ptr operand; std::string name; arg_exprs args; bool negated; };  // operand is [not] name
struct call_expr { expr_ptr callee; arg_exprs args; };
// clang-format on

struct expr {
  int line;
  std::variant<literal_expr, name_expr, list_expr, dict_expr, attr_expr, item_expr, slice_expr, unary_expr, binary_expr,
               compare_expr, cond_expr, filter_expr, test_expr, call_expr>
      node;
};

// ---- statements ---------------------------------------------------------------------------------

struct stmt;
using body = std::vector<stmt>;

// clang-format off
struct text_stmt { std::string text; };
struct output_stmt { expr_ptr value; };                         // {{ value }}
struct if_stmt {
  std::vector<std::pair<expr_ptr, body>> branches;              // if / elif conditions and bodies
  body otherwise;
};
struct for_stmt {
  std::vector<std::string> targets;                             // one name, or names unpacked per item
  expr_ptr iterable;
  expr_ptr filter;                                              // for x in xs if filter; may be null
  body loop_body;
  body otherwise;                                               // runs when nothing was iterated
};
struct set_stmt {
  std::vector<std::string> targets;                             // names (several: tuple unpacking)
  std::string attr;                                             // non-empty: {% set targets[0].attr = ... %}
  expr_ptr value;                                               // null for a block set: {% set x %}...{% endset %}
  body block;
};
struct macro_param { std::string name; expr_ptr default_value; };
struct macro_stmt {
  std::string name;
  std::vector<macro_param> params;
  std::shared_ptr<const body> macro_body;                       // shared with the callables made from it
};
struct call_block_stmt {                                        // {% call macro(args) %}caller body{% endcall %}
  expr_ptr call;
  std::shared_ptr<const body> caller_body;
};
struct loop_control_stmt { bool is_break; };
// clang-format on

struct stmt {
  int line;
  std::variant<text_stmt, output_stmt, if_stmt, for_stmt, set_stmt, macro_stmt, call_block_stmt, loop_control_stmt>
      node;
};

// Builds the tree from lex()'s tokens; nesting deeper than a fixed bound is an error, not a crash.
result<body> parse(std::vector<token> tokens);

}  // namespace pagedserve::jinja
