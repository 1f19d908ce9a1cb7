// Expressions: jinja2's expression grammar, precedence climbing by one function per level.
#include <algorithm>
#include <array>

#include "chat/jinja_parser.hpp"

namespace pagedserve::jinja {

// An expression, or several separated by commas (a tuple).
result<expr_ptr> expression_parser::parse_tuple(bool with_condexpr) {
  const int line = cur().line;
  JINJA_TRY(expr_ptr first, parse_expression(with_condexpr));
  if (!is_op(",")) return first;
  list_expr items;
  items.is_tuple = true;
  items.items.push_back(std::move(first));
  while (skip_op(",")) {
    if (cur().kind == token_kind::var_end || cur().kind == token_kind::block_end || is_op(")")) break;
    JINJA_TRY(expr_ptr e, parse_expression(with_condexpr));
    items.items.push_back(std::move(e));
  }
  return make(line, std::move(items));
}

result<expr_ptr> expression_parser::parse_expression(bool with_condexpr) {
  depth_guard g(depth_);
  JINJA_CHECK(check_depth());
  JINJA_TRY(expr_ptr e, parse_or());
  while (with_condexpr && is_name("if")) {
    const int line = cur().line;
    next();
    cond_expr c;
    JINJA_TRY(c.cond, parse_or());
    if (skip_name("else")) {
      JINJA_TRY(c.otherwise, parse_expression(true));
    }
    c.then = std::move(e);
    e = make(line, std::move(c));
  }
  return e;
}

result<expr_ptr> expression_parser::parse_or() {
  JINJA_TRY(expr_ptr e, parse_and());
  chain_guard chain(depth_);
  while (is_name("or")) {
    chain.link();
    JINJA_CHECK(check_depth());
    const int line = cur().line;
    next();
    JINJA_TRY(expr_ptr rhs, parse_and());
    e = make(line, binary_expr{binary_op::or_, std::move(e), std::move(rhs)});
  }
  return e;
}

result<expr_ptr> expression_parser::parse_and() {
  JINJA_TRY(expr_ptr e, parse_not());
  chain_guard chain(depth_);
  while (is_name("and")) {
    chain.link();
    JINJA_CHECK(check_depth());
    const int line = cur().line;
    next();
    JINJA_TRY(expr_ptr rhs, parse_not());
    e = make(line, binary_expr{binary_op::and_, std::move(e), std::move(rhs)});
  }
  return e;
}

result<expr_ptr> expression_parser::parse_not() {
  if (is_name("not")) {
    depth_guard g(depth_);
    JINJA_CHECK(check_depth());
    const int line = cur().line;
    next();
    JINJA_TRY(expr_ptr operand, parse_not());
    return make(line, unary_expr{unary_op::not_, std::move(operand)});
  }
  return parse_compare();
}

result<expr_ptr> expression_parser::parse_compare() {
  const int line = cur().line;
  JINJA_TRY(expr_ptr first, parse_math1());
  compare_expr c;
  chain_guard chain(depth_);
  while (true) {
    chain.link();
    JINJA_CHECK(check_depth());
    static constexpr std::array<std::pair<std::string_view, compare_op>, 6> ops = {{{"==", compare_op::eq},
                                                                                    {"!=", compare_op::ne},
                                                                                    {"<", compare_op::lt},
                                                                                    {"<=", compare_op::le},
                                                                                    {">", compare_op::gt},
                                                                                    {">=", compare_op::ge}}};
    compare_op op;
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return is_op(o.first); });
    if (it != ops.end())
      op = it->second, next();
    else if (is_name("in"))
      op = compare_op::in, next();
    else if (is_name("not") && peek().kind == token_kind::name && peek().text == "in")
      op = compare_op::not_in, next(), next();
    else
      break;
    JINJA_TRY(expr_ptr rhs, parse_math1());
    c.rest.emplace_back(op, std::move(rhs));
  }
  if (c.rest.empty()) return first;
  c.first = std::move(first);
  return make(line, std::move(c));
}

// One level of left-associative binary operators: sub(), then (op sub())*.
result<expr_ptr> expression_parser::parse_binary(sub_parser sub,
                                                 std::initializer_list<std::pair<std::string_view, binary_op>> ops) {
  JINJA_TRY(expr_ptr e, (this->*sub)());
  chain_guard chain(depth_);
  while (true) {
    chain.link();
    JINJA_CHECK(check_depth());
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return is_op(o.first); });
    if (it == ops.end()) return e;
    const int line = cur().line;
    next();
    JINJA_TRY(expr_ptr rhs, (this->*sub)());
    e = make(line, binary_expr{it->second, std::move(e), std::move(rhs)});
  }
}
result<expr_ptr> expression_parser::parse_math1() {
  return parse_binary(&expression_parser::parse_concat, {{"+", binary_op::add}, {"-", binary_op::sub}});
}
result<expr_ptr> expression_parser::parse_concat() {
  return parse_binary(&expression_parser::parse_math2, {{"~", binary_op::concat}});
}
result<expr_ptr> expression_parser::parse_math2() {
  return parse_binary(
      &expression_parser::parse_pow,
      {{"*", binary_op::mul}, {"/", binary_op::div}, {"//", binary_op::floordiv}, {"%", binary_op::mod}});
}
result<expr_ptr> expression_parser::parse_pow() {
  return parse_binary(&expression_parser::parse_unary_filtered, {{"**", binary_op::pow}});
}
result<expr_ptr> expression_parser::parse_unary_filtered() { return parse_unary(true); }

result<expr_ptr> expression_parser::parse_unary(bool with_filter) {
  depth_guard g(depth_);
  JINJA_CHECK(check_depth());
  const int line = cur().line;
  expr_ptr e;
  if (is_op("-") || is_op("+")) {
    const unary_op op = is_op("-") ? unary_op::neg : unary_op::pos;
    next();
    JINJA_TRY(expr_ptr operand, parse_unary(false));
    e = make(line, unary_expr{op, std::move(operand)});
  } else {
    JINJA_TRY(e, parse_primary());
  }
  JINJA_TRY(e, parse_postfix(std::move(e)));
  if (with_filter) {
    JINJA_TRY(e, parse_filters(std::move(e)));
  }
  return e;
}

result<expr_ptr> expression_parser::parse_primary() {
  const token& t = cur();
  const int line = t.line;
  switch (t.kind) {
    case token_kind::name: {
      const std::string n = t.text;
      next();
      if (n == "true" || n == "True") return make(line, literal_expr{true});
      if (n == "false" || n == "False") return make(line, literal_expr{false});
      if (n == "none" || n == "None") return make(line, literal_expr{none_t{}});
      return make(line, name_expr{n});
    }
    case token_kind::string: {
      std::string s;
      while (cur().kind == token_kind::string) s += cur().text, next();  // "a" "b" concatenates
      return make(line, literal_expr{std::move(s)});
    }
    case token_kind::integer: {
      const std::int64_t i = t.int_value;
      next();
      return make(line, literal_expr{i});
    }
    case token_kind::floating: {
      const double d = t.float_value;
      next();
      return make(line, literal_expr{d});
    }
    default:
      break;
  }
  if (skip_op("(")) {
    if (skip_op(")")) return make(line, list_expr{{}, true});
    JINJA_TRY(expr_ptr e, parse_tuple(true));
    JINJA_CHECK(expect_op(")"));
    return e;
  }
  if (skip_op("[")) {
    list_expr l;
    while (!is_op("]")) {
      JINJA_TRY(expr_ptr e, parse_expression(true));
      l.items.push_back(std::move(e));
      if (!skip_op(",")) break;
    }
    JINJA_CHECK(expect_op("]"));
    return make(line, std::move(l));
  }
  if (skip_op("{")) {
    dict_expr d;
    while (!is_op("}")) {
      JINJA_TRY(expr_ptr k, parse_expression(true));
      JINJA_CHECK(expect_op(":"));
      JINJA_TRY(expr_ptr v, parse_expression(true));
      d.items.emplace_back(std::move(k), std::move(v));
      if (!skip_op(",")) break;
    }
    JINJA_CHECK(expect_op("}"));
    return make(line, std::move(d));
  }
  return unexpected();
}

result<expr_ptr> expression_parser::parse_postfix(expr_ptr e) {
  chain_guard chain(depth_);
  while (true) {
    chain.link();
    JINJA_CHECK(check_depth());
    const int line = cur().line;
    if (skip_op(".")) {
      if (cur().kind == token_kind::integer) {  // a.0 is a[0]
        expr_ptr index = make(line, literal_expr{cur().int_value});
        next();
        e = make(line, item_expr{std::move(e), std::move(index)});
        continue;
      }
      JINJA_TRY(std::string n, expect_name());
      e = make(line, attr_expr{std::move(e), std::move(n)});
    } else if (skip_op("[")) {
      JINJA_TRY(e, parse_subscript(std::move(e), line));
    } else if (is_op("(")) {
      JINJA_TRY(arg_exprs args, parse_call_args());
      e = make(line, call_expr{std::move(e), std::move(args)});
    } else {
      return e;
    }
  }
}

// After "[": an index, or a slice start:stop:step with any part left out.
result<expr_ptr> expression_parser::parse_subscript(expr_ptr object, int line) {
  expr_ptr parts[3];
  int n_colons = 0;
  for (int k = 0; k < 3; ++k) {
    if (!is_op(":") && !is_op("]")) {
      JINJA_TRY(parts[k], parse_expression(true));
    }
    if (k < 2 && skip_op(":"))
      ++n_colons;
    else
      break;
  }
  JINJA_CHECK(expect_op("]"));
  if (n_colons == 0) {
    if (!parts[0]) return error("expected an index");
    return make(line, item_expr{std::move(object), std::move(parts[0])});
  }
  return make(line, slice_expr{std::move(object), std::move(parts[0]), std::move(parts[1]), std::move(parts[2])});
}

result<arg_exprs> expression_parser::parse_call_args() {
  JINJA_CHECK(expect_op("("));
  arg_exprs args;
  while (!is_op(")")) {
    if (cur().kind == token_kind::name && peek().kind == token_kind::op && peek().text == "=") {
      std::string n = cur().text;
      next();
      next();
      JINJA_TRY(expr_ptr v, parse_expression(true));
      args.keyword.emplace_back(std::move(n), std::move(v));
    } else {
      if (!args.keyword.empty()) return error("positional argument after keyword argument");
      JINJA_TRY(expr_ptr v, parse_expression(true));
      args.positional.push_back(std::move(v));
    }
    if (!skip_op(",")) break;
  }
  JINJA_CHECK(expect_op(")"));
  return args;
}

result<std::string> expression_parser::parse_dotted_name() {
  JINJA_TRY(std::string n, expect_name());
  while (skip_op(".")) {
    JINJA_TRY(std::string part, expect_name());
    n += "." + part;
  }
  return n;
}

// Filters ("| name(args)"), tests ("is [not] name args") and calls, left to right.
result<expr_ptr> expression_parser::parse_filters(expr_ptr e) {
  chain_guard chain(depth_);
  while (true) {
    chain.link();
    JINJA_CHECK(check_depth());
    const int line = cur().line;
    if (skip_op("|")) {
      filter_expr f;
      JINJA_TRY(f.name, parse_dotted_name());
      if (is_op("(")) {
        JINJA_TRY(f.args, parse_call_args());
      }
      f.operand = std::move(e);
      e = make(line, std::move(f));
    } else if (skip_name("is")) {
      test_expr t;
      t.negated = skip_name("not");
      JINJA_TRY(t.name, parse_dotted_name());
      if (is_op("(")) {
        JINJA_TRY(t.args, parse_call_args());
      } else if ((cur().kind == token_kind::name && !is_name("else") && !is_name("or") && !is_name("and") &&
                  !is_name("is")) ||
                 cur().kind == token_kind::string || cur().kind == token_kind::integer ||
                 cur().kind == token_kind::floating || is_op("[") || is_op("{")) {
        JINJA_TRY(expr_ptr arg, parse_primary());  // "x is divisibleby 3", "x is sameas none"
        JINJA_TRY(arg, parse_postfix(std::move(arg)));
        t.args.positional.push_back(std::move(arg));
      }
      t.operand = std::move(e);
      e = make(line, std::move(t));
    } else if (is_op("(")) {
      JINJA_TRY(arg_exprs args, parse_call_args());
      e = make(line, call_expr{std::move(e), std::move(args)});
    } else {
      return e;
    }
  }
}

}  // namespace pagedserve::jinja
