// Chat templates rendered exactly as Python jinja2 renders them under transformers'
// apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
// tojson with ensure_ascii=False): the golden conversations of the tokenizers.json goldens
// with the real Qwen3 and Llama 3 templates, the classic Llama 2 template, a table of language
// features whose expected strings came from jinja2 3.1.6, and errors that must not crash or hang.
#include "chat/chat_template.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <thread>

#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

// ---- helpers -------------------------------------------------------------------------------------

// A context from a JSON object: messages, add_generation_prompt, bos_token and eos_token go to
// their fields, every other key becomes a template variable. The clock is fixed at 2024-07-25.
chat_template_context context_from_json(std::string_view json) {
  chat_template_context ctx;
  ctx.now = std::chrono::sys_days{std::chrono::year{2024} / 7 / 25};
  auto parsed = chat_value_parse_json(json);
  EXPECT_TRUE(parsed.has_value()) << json;
  if (!parsed) return ctx;
  for (auto& [key, v] : std::get<chat_value::object>(parsed->data)) {
    if (key == "messages")
      ctx.messages = std::get<chat_value::array>(v.data);
    else if (key == "add_generation_prompt")
      ctx.add_generation_prompt = std::get<bool>(v.data);
    else if (key == "bos_token")
      ctx.bos_token = std::get<std::string>(v.data);
    else if (key == "eos_token")
      ctx.eos_token = std::get<std::string>(v.data);
    else
      ctx.variables.emplace_back(key, v);
  }
  return ctx;
}

std::expected<std::string, std::string> render(std::string_view source, std::string_view context_json = "{}",
                                               const chat_template_limits& limits = {}) {
  auto tpl = chat_template::parse(source);
  if (!tpl) return std::unexpected(tpl.error());
  return tpl->render(context_from_json(context_json), limits);
}

// The error of rendering `source`, or a note that it unexpectedly succeeded.
std::string render_error(std::string_view source, const chat_template_limits& limits = {}) {
  auto r = render(source, "{}", limits);
  return r ? "(rendered without error: " + r->substr(0, 200) + ")" : r.error();
}

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int k = 0; k < n; ++k) out += s;
  return out;
}

void write_file(const fs::path& p, std::string_view text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// ---- the golden conversations --------------------------------------------------------------------

class chat_template_golden_of : public testing::TestWithParam<std::string> {};

TEST_P(chat_template_golden_of, renders_every_golden_conversation_byte_for_byte) {
  const std::string name = GetParam();
  const fs::path dir = test::tokenizer_dir(name), golden_path = test::tokenizer_golden(name);
  PAGEDSERVE_REQUIRE_DATA(dir);
  PAGEDSERVE_REQUIRE_DATA(golden_path);
  simdjson::dom::parser parser;
  simdjson::dom::element golden;
  ASSERT_EQ(parser.load(golden_path.string()).get(golden), simdjson::SUCCESS);
  simdjson::dom::element tok;
  ASSERT_EQ(golden["tokenizers"][name].get(tok), simdjson::SUCCESS);
  const auto config = chat_template_load(dir / "tokenizer_config.json");
  ASSERT_TRUE(config.has_value()) << config.error();
  simdjson::dom::array cases;
  if (tok["chat"].get(cases) != simdjson::SUCCESS) {
    EXPECT_FALSE(config->chat_template.has_value()) << name << " has a template but no golden chat cases";
    return;
  }
  ASSERT_TRUE(config->chat_template.has_value()) << name;
  const auto tpl = chat_template::parse(*config->chat_template);
  ASSERT_TRUE(tpl.has_value()) << name << ": " << tpl.error();
  int index = 0;
  for (simdjson::dom::element c : cases) {
    chat_template_context ctx;
    auto messages = chat_value_parse_json(simdjson::minify(c["messages"]));
    ASSERT_TRUE(messages.has_value());
    ctx.messages = std::get<chat_value::array>(messages->data);
    ctx.add_generation_prompt = bool(c["add_generation_prompt"]);
    auto kwargs = chat_value_parse_json(simdjson::minify(c["template_kwargs"]));
    ASSERT_TRUE(kwargs.has_value());
    ctx.variables = std::get<chat_value::object>(kwargs->data);
    ctx.bos_token = config->bos_token;
    ctx.eos_token = config->eos_token;
    const auto rendered = tpl->render(ctx);
    ASSERT_TRUE(rendered.has_value()) << name << " case " << index << ": " << rendered.error();
    EXPECT_EQ(*rendered, std::string_view(c["rendered"])) << name << " case " << index;
    ++index;
  }
  EXPECT_GT(index, 0) << name;
}

// llama2 has no chat template: its golden has no chat cases, and the test checks the config has none.
INSTANTIATE_TEST_SUITE_P(hf, chat_template_golden_of, testing::Values("qwen3", "llama3", "llama2"));

TEST(chat_template_golden, loads_qwen3_special_tokens_from_tokenizer_config) {
  const fs::path qwen3_dir = test::tokenizer_dir("qwen3");
  PAGEDSERVE_REQUIRE_DATA(qwen3_dir);
  const auto qwen3 = chat_template_load(qwen3_dir / "tokenizer_config.json");
  ASSERT_TRUE(qwen3.has_value()) << qwen3.error();
  EXPECT_FALSE(qwen3->bos_token.has_value());  // null in the file: bos_token stays undefined
  EXPECT_EQ(qwen3->eos_token, "<|im_end|>");
}

TEST(chat_template_golden, loads_llama_special_tokens_from_tokenizer_config) {
  const fs::path llama3_dir = test::tokenizer_dir("llama3"), llama2_dir = test::tokenizer_dir("llama2");
  PAGEDSERVE_REQUIRE_DATA(llama3_dir);
  PAGEDSERVE_REQUIRE_DATA(llama2_dir);
  const auto llama3 = chat_template_load(llama3_dir / "tokenizer_config.json");
  ASSERT_TRUE(llama3.has_value()) << llama3.error();
  EXPECT_EQ(llama3->bos_token, "<|begin_of_text|>");
  const auto llama2 = chat_template_load(llama2_dir / "tokenizer_config.json");
  ASSERT_TRUE(llama2.has_value()) << llama2.error();
  EXPECT_FALSE(llama2->chat_template.has_value());
  EXPECT_EQ(llama2->bos_token, "<s>");
  EXPECT_EQ(llama2->eos_token, "</s>");
}

// ---- the classic Llama 2 chat template -----------------------------------------------------------

// meta-llama/Llama-2-7b-chat-hf's tokenizer_config.json chat_template.
constexpr std::string_view llama2_template =
    R"({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %})"
    R"({% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %})"
    R"({% set system_message = false %}{% endif %}{% for message in loop_messages %})"
    R"({% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %})"
    R"({{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %})"
    R"({% if loop.index0 == 0 and system_message != false %})"
    R"({% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %})"
    R"({% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %})"
    R"({{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %})"
    R"({{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})";

TEST(chat_template_llama2, system_message_goes_inside_the_first_instruction) {
  const auto r = render(llama2_template, R"({"bos_token": "<s>", "eos_token": "</s>", "messages": [
      {"role": "system", "content": "You are a pirate."},
      {"role": "user", "content": "Hello there "},
      {"role": "assistant", "content": " Arr, ahoy!"},
      {"role": "user", "content": "Where is the treasure?"}]})");
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(*r,
            "<s>[INST] <<SYS>>\nYou are a pirate.\n<</SYS>>\n\nHello there [/INST] Arr, ahoy! </s>"
            "<s>[INST] Where is the treasure? [/INST]");
}

TEST(chat_template_llama2, roles_that_do_not_alternate_raise_the_templates_exception) {
  const auto r = render(llama2_template, R"({"bos_token": "<s>", "eos_token": "</s>", "messages": [
      {"role": "user", "content": "Hi"}, {"role": "user", "content": "again"}]})");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("Conversation roles must alternate user/assistant/user/assistant/..."), std::string::npos)
      << r.error();
}

// ---- the language, feature by feature ------------------------------------------------------------

struct feature_case {
  std::string_view name;
  std::string_view source;
  std::string_view context;   // JSON object (see context_from_json)
  std::string_view expected;  // what jinja2 3.1.6 rendered, with transformers' globals and tojson
};

// Generated by rendering each source with Python jinja2 set up as transformers does.
// clang-format off
constexpr feature_case feature_cases[] = {
    {"literals",
     R"~({{ 'it\'s' }}|{{ "tab\there" }}|{{ '\u00e9\x41' }}|{{ 'a' 'b' }}|{{ 42 }}|{{ 1_000 }}|{{ 2.50 }}|)~"
     R"~({{ 1e-5 }}|{{ true }}|{{ False }}|{{ none }}|{{ None }})~", R"~({})~",
     "it's|tab\there|éA|ab|42|1000|2.5|1e-05|True|False|None|None"},
    {"containers",
     R"~({{ [1, 'a', none, true, 1.5] }}|{{ {'k': 'v', 'n': [1, 2.0]} }}|{{ (1,) }}|{{ ('a', 2) }}|)~"
     R"~({{ ["it's"] }})~", R"~({})~",
     R"~([1, 'a', None, True, 1.5]|{'k': 'v', 'n': [1, 2.0]}|(1,)|('a', 2)|["it's"])~"},
    {"float_repr",
     R"~({{ 0.1 + 0.2 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 1.5e-7 }}|{{ -0.0 }}|{{ 10 / 4 }}|{{ 4 / 2 }}|)~"
     R"~({{ 1 / 3 }})~", R"~({})~",
     R"~(0.30000000000000004|1e+16|1000000000000000.0|0.0001|1.5e-07|-0.0|2.5|2.0|0.3333333333333333)~"},
    {"arithmetic",
     R"~({{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2 + 3 * 4 }}|)~"
     R"~({{ (2 + 3) * 4 }}|{{ -2 ** 2 }}|{{ 10 - 2 - 3 }}|{{ true + 1 }}|{{ 7.5 // 2 }})~", R"~({})~",
     R"~(3|-4|2|1024|0.5|14|20|4|5|2|3.0)~"},
    {"sequences_ops",
     R"~({{ 'ab' * 3 }}|{{ 3 * 'x' }}|{{ [1] * 2 }}|{{ [1, 2] + [3] }}|{{ 'a' + 'b' }}|)~"
     R"~({{ 'a' ~ 1 ~ none ~ true ~ u ~ [1] }})~", R"~({})~", R"~(ababab|xxx|[1, 1]|[1, 2, 3]|ab|a1NoneTrue[1])~"},
    {"comparisons",
     R"~({{ 1 == 1.0 }}|{{ true == 1 }}|{{ [1, 2] == [1, 2] }}|{{ (1, 2) == [1, 2] }}|{{ 'a' < 'b' }}|)~"
     R"~({{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 2 >= 2 }}|{{ 'a' != 'a' }}|{{ [1, 2] < [1, 3] }})~", R"~({})~",
     R"~(True|True|True|False|True|True|False|True|False|True)~"},
    {"membership",
     R"~({{ 'a' in 'cat' }}|{{ 1 in [1, 2] }}|{{ 'k' in {'k': 1} }}|{{ 3 not in [1, 2] }}|)~"
     R"~({{ not 'x' in 'y' }}|{{ 'x' in u }})~", R"~({})~", R"~(True|True|True|True|True|False)~"},
    {"logic",
     R"~({{ 1 and 2 }}|{{ 0 or 'x' }}|{{ none or [] }}|{{ not true or true }}|{{ not (true or true) }}|)~"
     R"~({{ 'a' if true else 'b' }}|{{ 'a' if false else 'b' }}|[{{ 'a' if false }}]|)~"
     R"~({{ 1 if 0 else 2 if 0 else 3 }})~", R"~({})~", R"~(2|x|[]|True|False|a|b|[]|3)~"},
    {"subscripts",
     R"~({{ 'abc'[::-1] }}|{{ 'héllo'[1] }}|{{ 'héllo'[1:3] }}|{{ [1, 2, 3][-1] }}|[{{ [1, 2, 3][5] }}]|)~"
     R"~({{ [1, 2, 3, 4, 5][1:4] }}|{{ [1, 2, 3, 4, 5][::2] }}|{{ [1, 2, 3, 4, 5][-2:] }}|{{ [1, 2, 3, 4, )~"
     R"~(5][4:1:-1] }})~", R"~({})~", R"~(cba|é|él|3|[]|[2, 3, 4]|[1, 3, 5]|[4, 5]|[5, 4, 3])~"},
    {"attributes",
     R"~({{ m.role }}|{{ m['content'] }}|{{ ms.0.role }}|{{ ms[-1]['role'] }}|[{{ m.missing }}]|)~"
     R"~({{ m.missing is defined }}|{{ m.get('role') }}|{{ m.get('x') }}|{{ m.get('x', 5) }})~",
     R"~({"m": {"role": "user", "content": "hi"}, "ms": [{"role": "a"}, {"role": "b"}]})~",
     R"~(user|hi|a|b|[]|False|user|None|5)~"},
    {"undefined",
     R"~([{{ u }}]|{{ u is defined }}|{{ u is undefined }}|{{ u|length }}|{{ u == u }}|{% for x in u %})~"
     R"~(never{% endfor %}|{{ u|default('d') }}|{{ u is iterable }})~", R"~({})~", R"~([]|False|True|0|True||d|True)~"},
    {"string_methods",
     R"~({{ 'Hello'.startswith('He') }}|{{ 'x.py'.endswith(('.py', '.js')) }}|[{{ '  s \n'.strip() }}]|)~"
     R"~({{ 'xxsxx'.strip('x') }}|[{{ '\n\ns '.lstrip() }}]|[{{ ' s\n'.rstrip('\n') }}]|)~"
     R"~({{ 'abcb'.replace('b', 'B') }}|{{ 'AbC'.lower() }}|{{ 'abc'.upper() }}|)~"
     R"~({{ 'hello world-foo'.title() }}|{{ 'hello'.find('l') }}|{{ 'hello'.count('l') }}|{{ ','.join(['a', )~"
     R"~('b']) }})~", R"~({})~", R"~(True|True|[s]|s|[s ]|[ s]|aBcB|abc|ABC|Hello World-Foo|2|2|a,b)~"},
    {"split",
     R"~({{ '  x y  '.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|)~"
     R"~({{ 'a,b,c'.rsplit(',', 1) }}|{{ '  a b  c  '.split(none, 1) }}|{{ '  a b  c  '.rsplit(none, 1) }}|)~"
     R"~({{ 'a</think>b'.split('</think>')[-1] }})~", R"~({})~",
     R"~(['x', 'y']|['a', 'b', '', 'c']|['a', 'b,c']|['a,b', 'c']|['a', 'b  c  ']|['  a b', 'c']|b)~"},
    {"unicode_strip",
     R"~([{{ s|trim }}]|[{{ s.strip() }}]|{{ s|length }})~", "{\"s\": \"\u3000 \u00a0café\\n\\t\u2028\"}",
     R"~([café]|[café]|10)~"},
    {"dict_methods",
     R"~({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|)~"
     R"~({{ d.keys()|list }}|{{ d.values()|list }}|{{ d.items()|list }}|{{ d|length }})~",
     R"~({"d": {"b": 1, "a": [2]}})~", R"~(b=1;a=[2];|ba|['b', 'a']|[1, [2]]|[('b', 1), ('a', [2])]|2)~"},
    {"filters_text",
     R"~({{ 'Hello'|lower }}|{{ 'Hello'|upper }}|[{{ '  pad  '|trim }}]|{{ 'xxpadxx'|trim('x') }}|{{ 'aaa'|)~"
     R"~(replace('a', 'b', 2) }}|{{ 'hELLO wORLD'|capitalize }}|{{ 'hello world-foo (bar)'|title }}|{{ 3|)~"
     R"~(string ~ 'a' }}|{{ '<a&b>'|e }}|{{ 'x'|safe }})~", R"~({})~",
     R"~(hello|HELLO|[pad]|pad|bba|Hello world|Hello World-Foo (Bar)|3a|&lt;a&amp;b&gt;|x)~"},
    {"filters_seq",
     R"~({{ [1, 2, 3]|first }}|{{ [1, 2, 3]|last }}|[{{ []|first }}]|{{ 'abc'|first }}|{{ [1, 2, 3]|length }})~"
     R"~(|{{ {'a': 1}|count }}|{{ [3, 1, 2]|sort }}|{{ ['B', 'a', 'C']|sort }}|{{ [3, 1, 2]|)~"
     R"~(sort(reverse=true) }}|{{ [1, 2]|join(',') }}|{{ [1, none, 'a']|join }}|{{ 'abc'|list }}|{{ [1, 2]|)~"
     R"~(reverse|list }}|{{ 'abc'|reverse }}|{{ [1, 2, 1, 3]|unique|list }})~", R"~({})~",
     R"~(1|3|[]|a|3|1|[1, 2, 3]|['a', 'B', 'C']|[3, 2, 1]|1,2|1Nonea|['a', 'b', 'c']|[2, 1]|cba|[1, 2, 3])~"},
    {"filters_numbers",
     R"~({{ 1.5|int }}|{{ '12'|int }}|{{ 'x'|int }}|{{ '42.7'|int }}|{{ 'ff'|int(base=16) }}|{{ '3.5'|)~"
     R"~(float }}|{{ -3|abs }}|{{ 2.5|round }}|{{ 3.14159|round(2) }}|{{ 3|round }}|{{ [1, 2, 3]|sum }}|)~"
     R"~({{ [1, 5, 3]|max }}|{{ [4, 2, 3]|min }})~", R"~({})~", R"~(1|12|0|42|255|3.5|3|2.0|3.14|3|6|5|2)~"},
    {"filters_default",
     R"~({{ u|default('d') }}|[{{ ''|default('d') }}]|{{ ''|default('d', true) }}|{{ none|default('d') }}|)~"
     R"~({{ u|d('short') }})~", R"~({})~", R"~(d|[]|d|None|short)~"},
    {"filters_select_map",
     R"~({{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(' ') }}|{{ ms|)~"
     R"~(map(attribute='role')|list }}|{{ ms|rejectattr('role', 'eq', 'user')|list|length }}|{{ ms|)~"
     R"~(selectattr('tool_calls', 'defined')|list|length }}|{{ [1, 2, 3]|select('odd')|list }}|{{ [1, 2, 3]|)~"
     R"~(reject('odd')|list }}|{{ ['a', 'b']|map('upper')|list }}|{{ ms|map(attribute='x', default='?')|)~"
     R"~(list }})~",
     R"~({"ms": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool_calls": []}, )~"
     R"~({"role": "user", "content": "c"}]})~",
     R"~(a c|['user', 'assistant', 'user']|1|1|[1, 3]|[2]|['A', 'B']|['?', '?', '?'])~"},
    {"filters_items_dictsort",
     R"~({{ {'b': 1, 'a': 2}|dictsort }}|{% for k, v in {'a': 1}|items %}{{ k }}{{ v }}{% endfor %}|)~"
     R"~({{ {'a': 1, 'b': 2}|dictsort(by='value', reverse=true) }})~", R"~({})~",
     R"~([('a', 2), ('b', 1)]|a1|[('b', 2), ('a', 1)])~"},
    {"tojson",
     R"~({{ v|tojson }}|{{ 'x"\n'|tojson }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ {'a': [1, {}], )~"
     R"~('b': []}|tojson(indent=2) }}|{{ {'a': 1}|tojson(separators=(',', ':')) }}|{{ 'é😀'|)~"
     R"~(tojson(ensure_ascii=true) }})~", "{\"v\": {\"s\": \"café <\u2028>\", \"n\": null, \"t\": true, \"i\": 12, "
     R"~("f": 2.5, "e": 1e+100, "l": [1, "two"]}})~",
     "{\"s\": \"café <\u2028>\", \"n\": null, \"t\": true, \"i\": 12, \"f\": 2.5, "
     R"~("e": 1e+100, "l": [1, "two"]}|"x\"\n"|{"a": 2, "b": 1}|{
)~"
     R"~(  "a": [
    1,
    {}
  ],
  "b": []
}|{"a":1}|)~" R"~("\u00e9\ud83d\ude00")~"},
    {"tests",
     R"~({{ none is none }}|{{ 1 is number }}|{{ true is number }}|{{ true is integer }}|{{ 1.0 is float }}|)~"
     R"~({{ 's' is string }}|{{ {} is mapping }}|{{ [] is iterable }}|{{ {} is sequence }}|{{ 3 is odd }}|)~"
     R"~({{ 4 is even }}|{{ 9 is divisibleby 3 }}|{{ false is false }}|{{ 0 is false }}|{{ true is true }}|)~"
     R"~({{ 2 is eq 2 }}|{{ 2 is gt 1 }}|{{ 'a' is in 'abc' }}|{{ 'ABC' is upper }}|{{ 'abc' is lower }}|)~"
     R"~({{ none is sameas none }}|{{ range is callable }}|{{ x is not none }})~", R"~({"x": 1})~",
     R"~(True|True|True|False|True|True|True|True|True|True|True|True|True|False|True|True|True|True|True|)~"
     R"~(True|True|True|True)~"},
    {"loop_vars",
     R"~({% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }})~"
     R"~({{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }})~"
     R"~({{ loop.cycle('+', '-') }}|{% endfor %})~", R"~({})~",
     R"~(1032TrueFalse3b+|2121FalseFalse3ac-|3210FalseTrue3b+|)~"},
    {"loop_filter_else",
     R"~({% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.index }}{{ loop.last }},{% endfor %}|)~"
     R"~({% for x in [] %}a{% else %}empty{% endfor %}|{% for x in [1, 2, 3] if x > 5 %}a{% else %})~"
     R"~(none kept{% endfor %})~", R"~({})~", R"~(21False,42True,|empty|none kept)~"},
    {"loop_controls",
     R"~({% for x in range(1, 6) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %})~"
     R"~({% endif %}{{ x }}{% endfor %}|{% for i in range(3) %}{% for j in range(3) %}{% if j > i %})~"
     R"~({% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %})~", R"~({})~", R"~(13|00 10 11 20 21 22 )~"},
    {"loop_unpack_nested",
     R"~({% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}|{% for (a, b) in [(5, 6)] %}{{ a * b }})~"
     R"~({% endfor %}|{% for x in [1, 2] %}{% for y in 'ab' %}{{ loop.index }}{{ x }}{{ y }} {% endfor %})~"
     R"~({{ loop.index }};{% endfor %})~", R"~({})~", R"~(37|30|11a 21b 1;12a 22b 2;)~"},
    {"scoping",
     R"~({% set x = 0 %}{% for i in [1, 2] %}[{{ x }}]{% set x = i %}{{ x }}{% endfor %}|{{ x }}|)~"
     R"~({% if true %}{% set y = 3 %}{% endif %}{{ y }}|{% set i = 9 %}{% for i in [1] %}{% endfor %}{{ i }})~",
     R"~({})~", R"~([0]1[0]2|0|3|9)~"},
    {"namespace",
     R"~({% set ns = namespace(total=0, found=false) %}{% for x in [1, 2, 3] %})~"
     R"~({% set ns.total = ns.total + x %}{% if x == 2 %}{% set ns.found = true %}{% endif %}{% endfor %})~"
     R"~({{ ns.total }} {{ ns.found }} {{ ns.missing is defined }})~", R"~({})~", R"~(6 True False)~"},
    {"set_forms",
     R"~({% set a, b = [1, 2] %}{{ a }}{{ b }}|{% set c = 3, 4 %}{{ c }}|{% set d %}block {{ a }}{% endset %})~"
     R"~([{{ d }}])~", R"~({})~", R"~(12|(3, 4)|[block 1])~"},
    {"macros",
     R"~({% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }})~"
     R"~( {{ greet('Al', greeting='Hi') }} {{ greet(name='X', greeting='Yo') }}|{% macro f(n) %})~"
     R"~({% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}|{% macro wrap() %})~"
     R"~(<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %})~", R"~({})~",
     R"~(Hello, Bob! Hi, Al! Yo, X!|54321|<inner>)~"},
    {"globals",
     R"~({{ range(3)|list }}|{{ range(1, 7, 2)|list }}|{{ range(5, 0, -2)|list }}|{{ dict(a=1, b='x') }}|)~"
     R"~({{ namespace(a=1).a }}|{{ strftime_now('%Y-%m-%d %d %b %Y') }})~", R"~({})~",
     R"~([0, 1, 2]|[1, 3, 5]|[5, 3, 1]|{'a': 1, 'b': 'x'}|1|2024-07-25 25 Jul 2024)~"},
    {"ws_trim_lstrip",
     R"~(  {% if true %}
    x
  {% endif %}
  y
a
{% for i in [1, 2] %}
  {{ i }}
{% endfor %}
b
)~", R"~({})~",
     R"~(    x
  y
a
  1
  2
b)~"},
    {"ws_minus",
     R"~(a  {%- if true -%}  b  {%- endif -%}  c

{{- ' d ' -}}

 e {# comment #}
 f {#- c2 -#} g
)~"
     R"~(  {# own line #}
h)~", R"~({})~", R"~(abc d e  fg
h)~"},
    {"ws_plus",
     R"~(x {%+ if true %}y{% endif +%}
z
  {%+ if true %}w{% endif %})~"
     R"~(|{{ 'a' }}  {% if true %}b{% endif %}
  {{ 'c' }}
)~" "\t{% set q = 1 %}\nd", R"~({})~",
     R"~(x y
z
  w|a  b  c
d)~"},
    {"ws_newlines",
     "line1\r\nline2\r\n{% if true %}\r\nin\r\n{% endif %}\r\nend\r\n", R"~({})~", R"~(line1
line2
in
end)~"},
    {"ws_unicode_minus",
     "a \u3000{%- if true %}b{% endif %}|x{{- '  y  ' -}}\u00a0\u3000 z", R"~({})~", R"~(ab|x  y  z)~"},
    {"comment_and_braces",
     R"~(a{# {% if %} {{ }} #}b|{{ '}}' }}|{% set s = '%}' %}{{ s }}|{{ {'a': {'b': 1}} }}|{{ {'a': {'b': 1}})~"
     R"~(['a']['b'] }})~", R"~({})~", R"~(ab|}}|%}|{'a': {'b': 1}}|1)~"},
    {"multimodal_content",
     R"~({%- for message in messages %}{%- if message['content'] is string %}{{ message['content'] }})~"
     R"~({%- else %}{%- for c in message['content'] %}{%- if c['type'] == 'text' %}{{ c['text'] }})~"
     R"~({%- elif c['type'] == 'image' %}<img>{%- endif %}{%- endfor %}{%- endif %}|{%- endfor %})~",
     R"~({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image"}]}, )~"
     R"~({"role": "user", "content": "plain"}]})~", R"~(hi<img>|plain|)~"},
    {"generator_truth",
     R"~({{ [] | select('odd') is not none }}|{% if [2]|select('odd') %}generators are true{% endif %}|)~"
     R"~({{ [1]|map('string')|list }})~", R"~({})~", R"~(True|generators are true|['1'])~"},
};
// clang-format on

TEST(chat_template_language, renders_like_jinja2) {
  for (const feature_case& c : feature_cases) {
    const auto r = render(c.source, c.context);
    ASSERT_TRUE(r.has_value()) << c.name << ": " << r.error();
    EXPECT_EQ(*r, c.expected) << c.name;
  }
}

TEST(chat_template_language, generation_blocks_render_their_body) {
  const auto r =
      render("{% for m in ms %}{% generation %}[{{ m }}]{% endgeneration %}{% endfor %}", R"({"ms": ["a", "b"]})");
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(*r, "[a][b]");
}

TEST(chat_template_language, absent_special_tokens_are_undefined) {
  const auto r =
      render("[{{ bos_token }}]{{ bos_token is defined }}{{ eos_token is defined }}", R"({"eos_token": "</s>"})");
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(*r, "[]FalseTrue");
}

TEST(chat_template_language, one_parsed_template_renders_concurrently) {
  const auto tpl = chat_template::parse(
      "{% for m in messages %}<{{ m.role }}>{{ m.content|trim }}{% endfor %}{% if add_generation_prompt %}<a>{% endif "
      "%}");
  ASSERT_TRUE(tpl.has_value()) << tpl.error();
  chat_template_context ctx;
  for (int k = 0; k < 50; ++k)
    ctx.messages.push_back(chat_value::object{{"role", "user"}, {"content", " m" + std::to_string(k)}});
  ctx.add_generation_prompt = true;
  const auto expected = tpl->render(ctx);
  ASSERT_TRUE(expected.has_value());
  std::vector<std::thread> threads;
  std::atomic<int> n_mismatch{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k)
        if (tpl->render(ctx) != expected) ++n_mismatch;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(n_mismatch.load(), 0);
}

// ---- errors: reported, never a crash or a hang ---------------------------------------------------

TEST(chat_template_errors, syntax_errors_name_the_problem_and_line) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"{{ x", "unexpected end of template, expected '}}'"},
      {"{% if x", "unexpected end of template, expected '%}'"},
      {"{% if x %}", "expected 'elif' or 'else' or 'endif'"},
      {"{# note", "missing end of comment tag"},
      {"{{ 'abc }}", "unterminated string"},
      {"{% foo %}", "unknown tag 'foo'"},
      {"{% for x in y %}{% endif %}", "unknown tag 'endif', expected 'else' or 'endfor'"},
      {"{% endif %}", "unknown tag 'endif'"},
      {"{{ 1 + }}", "unexpected 'end of print statement'"},
      {"{{ (1 }}", "unexpected '}'"},
      {"{% break %}", "'break' outside of a loop"},
      {"{% macro %}{% endmacro %}", "expected a name"},
      {"{{ x is }}", "expected a name"},
      {"a\nb\n{{ ) }}", "line 3:"},
  };
  for (const auto& [source, message] : cases) {
    const auto tpl = chat_template::parse(source);
    ASSERT_FALSE(tpl.has_value()) << source;
    EXPECT_NE(tpl.error().find(message), std::string::npos) << source << " -> " << tpl.error();
  }
}

TEST(chat_template_errors, runtime_errors_are_returned_with_their_line) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"{{ x|nofilter }}", "no filter named 'nofilter'"},
      {"{{ x is nothing }}", "no test named 'nothing'"},
      {"\n{{ raise_exception('custom error') }}", "line 2: custom error"},
      {"{{ u.x }}", "'u' is undefined"},
      {"{{ u + 1 }}", "'u' is undefined"},
      {"{{ u() }}", "'u' is undefined"},
      {"{{ 1 + 'a' }}", "unsupported operand type(s) for +: 'int' and 'str'"},
      {"{{ 1 / 0 }}", "division by zero"},
      {"{{ [1].append(2) }}", "access to attribute 'append' of 'list' object is unsafe"},
      {"{{ 'abc'() }}", "'str' object is not callable"},
      {"{% set a, b = [1] %}", "not enough values to unpack"},
      {"{% set x = 1 %}{% set x.y = 2 %}", "cannot assign attribute on non-namespace object"},
      {"{{ 9223372036854775807 + 1 }}", "integer overflow"},
      {"{{ u|tojson }}", "not JSON serializable"},
  };
  for (const auto& [source, message] : cases) {
    const std::string error = render_error(source);
    EXPECT_NE(error.find(message), std::string::npos) << source << " -> " << error;
  }
}

TEST(chat_template_errors, runaway_recursion_and_nesting_are_bounded) {
  EXPECT_NE(
      render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("macro calls nested deeper than 64"),
      std::string::npos);
  // Deep nesting, whether recursive in the grammar or a long left-leaning chain, is a parse error.
  for (const std::string& source :
       {"{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}", repeat("{% if true %}", 100000),
        "{{ 1" + repeat(" + 1", 100000) + " }}", "{{ x" + repeat(".a", 100000) + " }}",
        "{{ x" + repeat("|trim", 100000) + " }}", "{{ " + repeat("not ", 100000) + "1 }}",
        "{{ " + repeat("-", 100000) + "1 }}", "{{ 1" + repeat(" and 1", 100000) + " }}"}) {
    const auto tpl = chat_template::parse(source);
    ASSERT_FALSE(tpl.has_value()) << source.substr(0, 40);
    EXPECT_NE(tpl.error().find("nested too deeply"), std::string::npos) << tpl.error();
  }
  chat_template_limits shallow;
  shallow.max_eval_depth = 20;
  EXPECT_NE(render_error("{{ 1" + repeat(" + 1", 30) + " }}", shallow).find("nested deeper than 20"),
            std::string::npos);
}

// A namespace holding itself prints as Python's recursive repr does (found by chat_template_fuzz: the
// printer recursed until the stack overflowed).
TEST(chat_template_errors, a_namespace_holding_itself_prints_once) {
  const auto r = render("{% set ns = namespace(k=0) %}{% set ns.k = ns %}{{ ns }}|{{ [ns] }}");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, "<Namespace {'k': <Namespace {...}>}>|[<Namespace {'k': <Namespace {...}>}>]");
}

TEST(chat_template_errors, loops_output_and_values_are_bounded) {
  chat_template_limits small;
  small.max_loop_iterations = 1000;
  small.max_output_bytes = 4096;
  EXPECT_NE(render_error("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", small)
                .find("more than 1000 loop iterations"),
            std::string::npos);
  EXPECT_NE(render_error("{% for i in range(100) %}{{ 'x' * 100 }}{% endfor %}", small).find("rendered output exceeds"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 'x' * 5000 }}", small).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(render_error("{{ range(100000)|length }}", small).find("exceeds the limit"), std::string::npos);
  // A string that doubles every iteration hits the default size limit long before memory runs out.
  EXPECT_NE(
      render_error("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
          .find("exceeds the limit"),
      std::string::npos);
}

// ---- loading tokenizer_config.json ---------------------------------------------------------------

class chat_template_load_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pagedserve_chat_template_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(chat_template_load_test, reads_added_token_objects_and_the_default_of_named_templates) {
  write_file(dir_ / "tokenizer_config.json", R"({
      "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
      "eos_token": "</s>",
      "chat_template": [{"name": "tool_use", "template": "tools"},
                        {"name": "default", "template": "{{ bos_token }}hi"}]})");
  const auto cfg = chat_template_load(dir_ / "tokenizer_config.json");
  ASSERT_TRUE(cfg.has_value()) << cfg.error();
  EXPECT_EQ(cfg->bos_token, "<s>");
  EXPECT_EQ(cfg->eos_token, "</s>");
  EXPECT_EQ(cfg->chat_template, "{{ bos_token }}hi");
}

TEST_F(chat_template_load_test, falls_back_to_a_chat_template_jinja_beside_the_config) {
  write_file(dir_ / "tokenizer_config.json", R"({"eos_token": null})");
  EXPECT_FALSE(chat_template_load(dir_ / "tokenizer_config.json")->chat_template.has_value());
  write_file(dir_ / "chat_template.jinja", "{{ messages|length }}");
  const auto cfg = chat_template_load(dir_ / "tokenizer_config.json");
  ASSERT_TRUE(cfg.has_value()) << cfg.error();
  EXPECT_EQ(cfg->chat_template, "{{ messages|length }}");
  EXPECT_FALSE(cfg->eos_token.has_value());
}

TEST_F(chat_template_load_test, unreadable_or_malformed_configs_are_errors) {
  EXPECT_FALSE(chat_template_load(dir_ / "missing.json").has_value());
  write_file(dir_ / "tokenizer_config.json", "{ not json");
  EXPECT_FALSE(chat_template_load(dir_ / "tokenizer_config.json").has_value());
  write_file(dir_ / "tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "x"}]})");
  const auto cfg = chat_template_load(dir_ / "tokenizer_config.json");
  ASSERT_FALSE(cfg.has_value());
  EXPECT_NE(cfg.error().find("default"), std::string::npos) << cfg.error();
}

TEST(chat_value_json, keeps_key_order_and_number_types) {
  const auto v = chat_value_parse_json(R"({"z": 1, "a": [2.0, "s", null, true], "m": {"k": -3}})");
  ASSERT_TRUE(v.has_value()) << v.error();
  const auto& obj = std::get<chat_value::object>(v->data);
  ASSERT_EQ(obj.size(), 3u);
  EXPECT_EQ(obj[0].first, "z");
  EXPECT_EQ(std::get<std::int64_t>(obj[0].second.data), 1);
  const auto& arr = std::get<chat_value::array>(obj[1].second.data);
  EXPECT_EQ(std::get<double>(arr[0].data), 2.0);
  EXPECT_FALSE(chat_value_parse_json("[1, ").has_value());
  EXPECT_FALSE(chat_value_parse_json("[1] 2").has_value());
  EXPECT_FALSE(chat_value_parse_json("{\"a\": tru}").has_value());
  const auto big = chat_value_parse_json("[1000000000000000019884624838656, \"\\u00e9\"]");  // beyond 64 bits: a float
  ASSERT_TRUE(big.has_value()) << big.error();
  EXPECT_EQ(std::get<double>(std::get<chat_value::array>(big->data)[0].data), 1e30);
  EXPECT_EQ(std::get<std::string>(std::get<chat_value::array>(big->data)[1].data), "\u00e9");
  const auto r = render("{{ v|tojson }}", R"({"v": {"z": 1, "a": [2.0, "s", null, true]}})");
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(*r, R"({"z": 1, "a": [2.0, "s", null, true]})");
}

}  // namespace
}  // namespace pagedserve
