// The chat page: conversations, streaming replies over /v1/ws (DESIGN.md's protocol), Stop,
// Regenerate, editing and resending a message, a reply's reasoning folded above it, export, settings,
// per-reply figures and the server's load. Every reply is drawn by render_markdown, which builds DOM
// nodes from text and never parses HTML.
import { auth_headers, connection } from './connection.js';
import { conversation_json, conversation_markdown, download } from './export.js';
import { render_markdown } from './markdown.js';
import { conversation_store, load_settings, save_settings } from './store.js';

const $ = (id) => document.getElementById(id);
const store = new conversation_store();
let settings = load_settings();
let request_seq = 0;
let model_name = '';
// The reply being generated: {id, conv, reply, t_sent, t_first, t_last, n_tokens}.
let active = null;
// Replies the user stopped, by request id: the server's late done frame still brings their usage.
const stopped = new Map();

const conn = new connection({
  get_key: () => settings.api_key,
  on_frame,
  on_state: show_connection,
  on_lost: () => {
    if (active) fail_active('The connection to the server was lost during this reply; it is incomplete.');
  },
});

// ---- connection state and errors --------------------------------------------------------------

function show_connection(state, detail) {
  const el = $('conn');
  el.dataset.state = state;
  if (state === 'open') {
    el.textContent = 'Connected';
    show_banner(null);
    fetch_model();
  } else if (state === 'connecting') {
    el.textContent = detail.attempt ? 'Reconnecting…' : 'Connecting…';
  } else if (state === 'unauthorized') {
    el.textContent = 'API key rejected';
    show_banner('The server rejected the API key. Set the right key in Settings → API key.', 'auth');
  } else {
    el.textContent = `Reconnecting in ${Math.round(detail.retry_ms / 100) / 10} s`;
    show_banner(`${detail.reason} Reconnecting automatically…`, 'down');
  }
  update_buttons();
}

function show_banner(text, kind = 'error') {
  const b = $('banner');
  b.hidden = !text;
  b.textContent = text ?? '';
  b.dataset.kind = text ? kind : '';
}

async function fetch_model() {
  try {
    const res = await fetch('/v1/models', { headers: auth_headers(settings.api_key), cache: 'no-store' });
    const body = await res.json();
    if (res.ok) model_name = body.data[0]?.id ?? '';
    $('model-name').textContent = res.ok ? body.data.map((m) => m.id).join(', ') : `(${body.error?.message ?? res.status})`;
    document.title = res.ok ? `${body.data[0]?.id ?? 'pagedserve'} · pagedserve chat` : 'pagedserve chat';
  } catch {
    $('model-name').textContent = '(unreachable)';
  }
}

// ---- server load ------------------------------------------------------------------------------

async function poll_health() {
  const load = $('load');
  try {
    const res = await fetch('/health', { cache: 'no-store' });
    const h = await res.json();
    if (h.status === 'loading') {  // 503 until the model is loaded; the socket connects after
      load.dataset.state = 'loading';
      for (const id of ['load-running', 'load-waiting', 'load-kv']) $(id).textContent = '–';
      $('load-kv').textContent = 'model loading';
      return;
    }
    $('load-running').textContent = h.running;
    $('load-waiting').textContent = h.waiting;
    const used = h.kv_blocks_total - h.kv_blocks_free;
    const pct = h.kv_blocks_total ? Math.round((100 * used) / h.kv_blocks_total) : 0;
    $('load-kv').textContent = `${pct}% (${used}/${h.kv_blocks_total} blocks)`;
    load.dataset.state = 'ok';
    load.dataset.kvFree = h.kv_blocks_free;
    load.dataset.kvTotal = h.kv_blocks_total;
  } catch {
    load.dataset.state = 'down';
    for (const id of ['load-running', 'load-waiting', 'load-kv']) $(id).textContent = '–';
  }
}

// ---- generation -------------------------------------------------------------------------------

function request_params() {
  const p = { temperature: Number(settings.temperature), top_p: Number(settings.top_p) };
  if (Number(settings.max_tokens) > 0) p.max_tokens = Math.floor(Number(settings.max_tokens));
  if (String(settings.seed).trim() !== '') p.seed = Math.floor(Number(settings.seed));
  return p;
}

// Asks for the next assistant turn of conv: the history goes as `messages`.
function generate(conv) {
  const history = conv.messages
    .filter((m) => m.role === 'user' || (m.role === 'assistant' && m.state !== 'error' && m.content))
    .map(({ role, content }) => ({ role, content }));
  if (settings.system_prompt.trim()) history.unshift({ role: 'system', content: settings.system_prompt });
  const reply = { role: 'assistant', content: '', state: 'streaming', stats: {} };
  conv.messages.push(reply);
  const id = `r${++request_seq}-${Math.random().toString(36).slice(2, 8)}`;
  active = { id, conv, reply, t_sent: performance.now(), t_first: 0, t_last: 0, n_tokens: 0 };
  if (!conn.send({ type: 'generate', id, messages: history, params: request_params() }))
    fail_active('Not connected to the server: the message was not sent. It reconnects by itself; then press Regenerate.');
  store.touch(conv);
  render_all();
}

function send_prompt() {
  const text = $('prompt').value;
  if (!text.trim() || active) return;
  const conv = store.current();
  conv.messages.push({ role: 'user', content: text });
  $('prompt').value = '';
  generate(conv);
}

// The user's message m, changed to text: the turns after it are dropped and it is asked again.
function resend_edited(m, text) {
  if (active || !text.trim()) return;
  const conv = store.current();
  const at = conv.messages.indexOf(m);
  if (at < 0) return;
  conv.messages.splice(at + 1);
  m.content = text;
  generate(conv);
}

function regenerate() {
  if (active) return;
  const conv = store.current();
  while (conv.messages.length && conv.messages.at(-1).role === 'assistant') conv.messages.pop();
  if (!conv.messages.length) return;
  generate(conv);
}

function stop() {
  if (!active) return;
  conn.send({ type: 'cancel', id: active.id });
  stopped.set(active.id, active.reply);
  finish_active('stopped');
}

function finish_active(state, error) {
  const { conv, reply } = active;
  reply.state = state;
  if (error) reply.error = error;
  active = null;
  store.touch(conv);
  render_reply_in_place(reply);
  update_buttons();
}

function fail_active(message) {
  finish_active('error', message);
}

function on_frame(msg) {
  if (msg.type === 'error' && msg.id === null) return show_banner(`Server error: ${msg.code}: ${msg.message}`);
  if (stopped.has(msg.id)) {  // the late frames of a reply the user stopped: only its final usage counts
    const reply = stopped.get(msg.id);
    if (msg.type === 'done') {
      reply.stats = { ...reply.stats, tokens: msg.usage.completion_tokens, finish: msg.finish_reason };
      render_reply_in_place(reply);
    }
    if (msg.type !== 'token') stopped.delete(msg.id);
    return;
  }
  if (!active || msg.id !== active.id) return;
  const { reply } = active;
  const now = performance.now();
  if (msg.type === 'token') {
    if (!active.t_first) active.t_first = now;
    active.t_last = now;
    active.n_tokens += msg.token_ids.length;
    reply.content += msg.text ?? '';
    if (msg.reasoning) reply.reasoning = (reply.reasoning ?? '') + msg.reasoning;
    reply.stats = live_stats(active);
    schedule_render(reply);
  } else if (msg.type === 'done') {
    if (typeof msg.reasoning === 'string' && msg.reasoning) reply.reasoning = msg.reasoning;  // the whole text
    const t = msg.timings ?? {};
    reply.stats = {
      ttft_ms: t.ttft_ms ?? reply.stats.ttft_ms,
      tokens_per_second: t.tokens_per_second ?? reply.stats.tokens_per_second,
      tokens: msg.usage?.completion_tokens ?? active.n_tokens,
      finish: msg.finish_reason,
    };
    finish_active('done');
  } else if (msg.type === 'error') {
    fail_active(`The server rejected the request: ${msg.message} (${msg.code})`);
  }
}

function live_stats(a) {
  const span_s = (a.t_last - a.t_first) / 1000;
  return {
    ttft_ms: a.t_first - a.t_sent,
    tokens_per_second: a.n_tokens > 1 && span_s > 0 ? (a.n_tokens - 1) / span_s : null,
    tokens: a.n_tokens,
  };
}

// ---- drawing ----------------------------------------------------------------------------------

const reply_nodes = new WeakMap();  // reply -> its element, for redrawing while it streams
let render_pending = null;

function schedule_render(reply) {
  if (render_pending) return;
  render_pending = requestAnimationFrame(() => {
    render_pending = null;
    render_reply_in_place(reply);
  });
}

function stats_text(m) {
  const s = m.stats ?? {};
  const parts = [];
  if (s.ttft_ms != null) parts.push(`TTFT ${Math.round(s.ttft_ms)} ms`);
  if (s.tokens_per_second != null) parts.push(`${s.tokens_per_second.toFixed(1)} tok/s`);
  if (s.tokens != null) parts.push(`${s.tokens} tokens`);
  const labels = { length: 'max tokens reached', stop: 'finished', cancelled: 'stopped' };
  if (m.state === 'stopped') parts.push('stopped');
  else if (s.finish) parts.push(labels[s.finish] ?? s.finish);
  return parts.join(' · ');
}

// A reply's reasoning in a fold above it, closed unless the user opened it (kept open while it streams).
function fill_reasoning(node, m) {
  const fold = node.querySelector('.reasoning');
  if (!fold) return;
  fold.hidden = !m.reasoning;
  if (!m.reasoning) return;
  fold.querySelector('summary').textContent =
    m.state === 'streaming' && !m.content ? 'Reasoning…' : `Reasoning (${m.reasoning.length} characters)`;
  fold.querySelector('.reasoning-body').replaceChildren(render_markdown(m.reasoning));
}

function fill_message(node, m) {
  node.dataset.state = m.state ?? 'done';
  fill_reasoning(node, m);
  const body = node.querySelector('.body');
  if (m.role === 'assistant') body.replaceChildren(render_markdown(m.content));
  else body.textContent = m.content;
  if (m.role === 'assistant' && m.state === 'streaming' && !m.content) body.textContent = '…';
  node.querySelector('.meta').textContent = m.role === 'assistant' ? stats_text(m) : '';
  const err = node.querySelector('.error');
  err.hidden = !m.error;
  err.textContent = m.error ?? '';
}

function message_node(m) {
  const node = document.createElement('article');
  node.className = `msg ${m.role}`;
  const who = document.createElement('div');
  who.className = 'who';
  who.textContent = m.role === 'user' ? 'You' : 'Assistant';
  const body = document.createElement('div');
  body.className = 'body';
  const meta = document.createElement('div');
  meta.className = 'meta';
  const err = document.createElement('div');
  err.className = 'error';
  if (m.role === 'assistant') {
    const fold = document.createElement('details');
    fold.className = 'reasoning';
    const summary = document.createElement('summary');
    const inner = document.createElement('div');
    inner.className = 'reasoning-body';
    fold.append(summary, inner);
    node.append(who, fold, body, err, meta);
  } else {
    const edit = document.createElement('button');
    edit.type = 'button';
    edit.className = 'edit';
    edit.textContent = 'Edit';
    edit.title = 'Edit this message and ask again from here';
    edit.addEventListener('click', () => start_editing(node, m));
    node.append(who, body, err, meta, edit);
  }
  fill_message(node, m);
  reply_nodes.set(m, node);
  return node;
}

// The user's message as a text box with Save & resend and Cancel.
function start_editing(node, m) {
  if (active || node.querySelector('.editor')) return;
  const body = node.querySelector('.body');
  const editor = document.createElement('div');
  editor.className = 'editor';
  const box = document.createElement('textarea');
  box.value = m.content;
  box.rows = Math.min(10, m.content.split('\n').length + 1);
  const save = document.createElement('button');
  save.type = 'button';
  save.className = 'primary save';
  save.textContent = 'Save & resend';
  save.addEventListener('click', () => resend_edited(m, box.value));
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.className = 'cancel';
  cancel.textContent = 'Cancel';
  cancel.addEventListener('click', () => {
    editor.remove();
    body.hidden = false;
  });
  editor.append(box, save, cancel);
  body.hidden = true;
  body.after(editor);
  box.focus();
}

function render_reply_in_place(reply) {
  const node = reply_nodes.get(reply);
  if (!node || !node.isConnected) return;
  const list = $('messages');
  const at_bottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  fill_message(node, reply);
  if (at_bottom) list.scrollTop = list.scrollHeight;
}

function render_conversations() {
  const nav = $('conversations');
  nav.replaceChildren(...store.list.map((c) => {
    const row = document.createElement('div');
    row.className = 'conv';
    row.dataset.current = String(c.id === store.current_id);
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'title';
    open.textContent = c.title;
    open.title = c.title;
    open.addEventListener('click', () => {
      if (active) return;
      store.select(c.id);
      render_all();
    });
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'delete';
    del.textContent = '×';
    del.title = 'Delete this conversation';
    del.addEventListener('click', () => {
      if (active?.conv === c) stop();
      store.remove(c.id);
      render_all();
    });
    row.append(open, del);
    return row;
  }));
}

function render_all() {
  render_conversations();
  const conv = store.current();
  const list = $('messages');
  if (!conv.messages.length) {
    const empty = document.createElement('p');
    empty.className = 'empty';
    empty.textContent = 'Start the conversation below. Replies stream in as the server samples them.';
    list.replaceChildren(empty);
  } else {
    list.replaceChildren(...conv.messages.map(message_node));
  }
  list.scrollTop = list.scrollHeight;
  update_buttons();
}

function update_buttons() {
  const open = $('conn').dataset.state === 'open';
  const conv = store.current();
  $('send').disabled = !!active || !open;
  $('stop').disabled = !active;
  $('regenerate').disabled = !!active || !open || !conv?.messages.some((m) => m.role === 'user');
  $('new-chat').disabled = !!active;
  for (const b of document.querySelectorAll('#messages .edit, #messages .save')) b.disabled = !!active || !open;
  const empty = !conv?.messages.length;
  $('export-json').disabled = empty;
  $('export-md').disabled = empty;
}

// ---- settings ---------------------------------------------------------------------------------

const setting_inputs = {
  temperature: 'set-temperature', top_p: 'set-top-p', max_tokens: 'set-max-tokens', seed: 'set-seed',
  system_prompt: 'set-system', api_key: 'set-api-key',
};

function bind_settings() {
  for (const [key, id] of Object.entries(setting_inputs)) {
    const input = $(id);
    input.value = settings[key];
    input.addEventListener('change', () => {
      const key_changed = key === 'api_key' && input.value !== settings.api_key;
      settings = { ...settings, [key]: input.value };
      save_settings(settings);
      if (key_changed) conn.restart();
    });
  }
}

// ---- start ------------------------------------------------------------------------------------

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  send_prompt();
});
$('prompt').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send_prompt();
  }
});
$('stop').addEventListener('click', stop);
$('export-json').addEventListener('click', () => {
  const conv = store.current();
  download(conv, 'json', 'application/json', conversation_json(conv, model_name));
});
$('export-md').addEventListener('click', () => {
  const conv = store.current();
  download(conv, 'md', 'text/markdown', conversation_markdown(conv, model_name));
});
$('regenerate').addEventListener('click', regenerate);
$('new-chat').addEventListener('click', () => {
  if (active) return;
  store.create();
  render_all();
  $('prompt').focus();
});

bind_settings();
render_all();
conn.start();
poll_health();
setInterval(poll_health, 2000);
