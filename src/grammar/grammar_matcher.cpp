#include "grammar/grammar_matcher.hpp"

#include <algorithm>

namespace pagedserve::grammar {

namespace {
constexpr std::uint32_t no_pos = 0xFFFFFFFFu;
}

grammar_matcher::grammar_matcher(std::shared_ptr<const grammar> g) : grammar_(std::move(g)) {
  nodes_.push_back({no_pos, 0, 0});  // id 0: the empty stack
  for (std::uint32_t start : grammar_->alternatives[grammar_->root]) expand(intern(start, 0), current_);
  normalise(current_);
}

std::uint32_t grammar_matcher::intern(std::uint32_t pos, std::uint32_t parent) {
  const std::uint64_t key = (std::uint64_t{pos} << 32) | parent;
  auto [it, fresh] = interned_.try_emplace(key, static_cast<std::uint32_t>(nodes_.size()));
  if (fresh) nodes_.push_back({pos, parent, nodes_[parent].depth + 1});
  return it->second;
}

void grammar_matcher::expand(std::uint32_t n, state& out) {
  if (n == 0) {
    out.push_back(0);
    return;
  }
  const node at = nodes_[n];
  if (at.depth > max_stack_depth) return;  // nesting past the cap: this path is dropped
  const element e = grammar_->elements[at.pos];
  switch (e.type) {
    case element::kind::bytes: out.push_back(n); return;
    case element::kind::end: expand(at.parent, out); return;
    case element::kind::rule: {
      // A reference in tail position replaces its frame, so R ::= x R never deepens the stack.
      const bool tail = grammar_->elements[at.pos + 1].type == element::kind::end;
      const std::uint32_t below = tail ? at.parent : intern(at.pos + 1, at.parent);
      for (std::uint32_t start : grammar_->alternatives[e.index]) expand(intern(start, below), out);
      return;
    }
  }
}

void grammar_matcher::normalise(state& s) const {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  if (s.size() > max_stack_set) s.resize(max_stack_set);
}

void grammar_matcher::advance(const state& from, unsigned char b, state& to) {
  to.clear();
  for (std::uint32_t n : from) {
    if (n == 0) continue;
    const node at = nodes_[n];
    if (!grammar_->sets[grammar_->elements[at.pos].index].contains(b)) continue;
    const std::uint64_t key = (std::uint64_t{n} << 8) | b;
    auto it = steps_.find(key);
    if (it == steps_.end()) {
      state next;
      expand(intern(at.pos + 1, at.parent), next);
      normalise(next);
      it = steps_.emplace(key, std::move(next)).first;
    }
    to.insert(to.end(), it->second.begin(), it->second.end());
  }
  if (from.size() > 1) normalise(to);
}

bool grammar_matcher::accept(std::string_view bytes) {
  state s = current_, next;
  for (char c : bytes) {
    advance(s, static_cast<unsigned char>(c), next);
    if (next.empty()) return false;
    s.swap(next);
  }
  current_ = std::move(s);
  return true;
}

bool grammar_matcher::compact_if_large() {
  if (nodes_.size() < max_arena_nodes) return false;
  // Copy the live stacks (bottom first) into a fresh arena; the memo is rebuilt on demand.
  std::vector<node> old = std::move(nodes_);
  nodes_.clear();
  interned_.clear();
  steps_.clear();
  nodes_.push_back({no_pos, 0, 0});
  state fresh;
  for (std::uint32_t n : current_) {
    std::vector<std::uint32_t> chain;
    for (std::uint32_t k = n; k != 0; k = old[k].parent) chain.push_back(old[k].pos);
    std::uint32_t id = 0;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) id = intern(*it, id);
    fresh.push_back(id);
  }
  normalise(fresh);
  current_ = std::move(fresh);
  return true;
}

}  // namespace pagedserve::grammar
