// Conversations and settings kept in the browser's localStorage, so a reload or another tab keeps
// them. A conversation is {id, title, updated, messages: [{role, content, state, stats, error}]}:
// role 'user' or 'assistant'; state (assistant only) 'streaming' | 'done' | 'stopped' | 'error'.

const conversations_key = 'pagedserve.conversations';
const current_key = 'pagedserve.current';
const settings_key = 'pagedserve.settings';

export const default_settings = Object.freeze({
  temperature: 0.8,
  top_p: 0.95,
  max_tokens: 256,   // 0 = as many as the context has room for
  seed: '',          // '' = a new random seed each request
  system_prompt: '',
  api_key: '',
});

function read_json(key, fallback) {
  try {
    const raw = localStorage.getItem(key);
    return raw === null ? fallback : JSON.parse(raw);
  } catch {
    return fallback;
  }
}

export function load_settings() {
  const saved = read_json(settings_key, {});
  return { ...default_settings, ...(saved && typeof saved === 'object' ? saved : {}) };
}

export function save_settings(settings) {
  localStorage.setItem(settings_key, JSON.stringify(settings));
}

function new_id() {
  return `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

export class conversation_store {
  constructor() {
    const list = read_json(conversations_key, []);
    this.list = Array.isArray(list) ? list.filter((c) => c && Array.isArray(c.messages)) : [];
    // A reply that was streaming when the page closed will never finish.
    for (const c of this.list)
      for (const m of c.messages)
        if (m.state === 'streaming') Object.assign(m, { state: 'error', error: 'The page was closed during this reply.' });
    this.current_id = localStorage.getItem(current_key);
    if (!this.current()) this.current_id = this.list[0]?.id ?? this.create().id;
  }

  current() {
    return this.list.find((c) => c.id === this.current_id) ?? null;
  }

  // A new empty conversation, first in the list and current; an empty current one is reused.
  create() {
    const now = this.current?.();
    if (now && now.messages.length === 0) return now;
    const c = { id: new_id(), title: 'New conversation', updated: Date.now(), messages: [] };
    this.list.unshift(c);
    this.current_id = c.id;
    this.save();
    return c;
  }

  select(id) {
    if (this.list.some((c) => c.id === id)) this.current_id = id;
    this.save();
  }

  remove(id) {
    this.list = this.list.filter((c) => c.id !== id);
    if (this.current_id === id) this.current_id = this.list[0]?.id ?? null;
    if (!this.current()) this.create();
    this.save();
  }

  touch(c) {
    c.updated = Date.now();
    const first_user = c.messages.find((m) => m.role === 'user');
    if (first_user) c.title = first_user.content.replace(/\s+/g, ' ').trim().slice(0, 60) || 'Untitled';
    this.list.sort((a, b) => b.updated - a.updated);
    this.save();
  }

  save() {
    try {
      localStorage.setItem(conversations_key, JSON.stringify(this.list));
      if (this.current_id) localStorage.setItem(current_key, this.current_id);
    } catch {
      // Storage full or disabled: the page keeps working for this visit.
    }
  }
}
