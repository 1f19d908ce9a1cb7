// The chat page (web/) in Debian's chromium, driven by playwright-core, against the real server
// with stories260K and an API key. In order: a wrong key is shown and the right one connects (the
// key travels as a WebSocket subprotocol); a streamed reply and a follow-up turn equal the server's
// greedy completions of the same messages; Stop ends a reply while the server is generating and
// every KV block comes back; a rejected request is shown; hostile "model output" sent over the
// page's WebSocket is shown as text (and a connection dropped mid-reply is reported and reopened);
// the server stopped and started again on the same port is shown and reconnected to. A screenshot
// goes to $PAGEDSERVE_BROWSER_ARTIFACTS/chat.png.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { skipReason, startServer } from '../support/server.mjs';

const chromiumPath = '/usr/bin/chromium';
const reason = skipReason() ?? (existsSync(chromiumPath) ? null : `no ${chromiumPath}: skipping (scripts/install-deps.sh installs it)`);
if (reason) console.log(`# SKIP: ${reason}`);
const artifacts = process.env.PAGEDSERVE_BROWSER_ARTIFACTS ?? join(tmpdir(), 'pagedserve-browser-artifacts');
const key = 'sk-browser-test';

describe('chat page in chromium', { skip: reason ?? false }, () => {
  let server, port, context, page, userDir;
  const pageErrors = [];
  const sent = [];      // generate/cancel frames the page sent, in order
  const received = [];  // frames the page received

  const base = () => `http://127.0.0.1:${port}`;
  const lastReply = () => page.locator('#messages .msg.assistant').last();

  async function setSetting(id, value) {
    if (!(await page.locator('#settings').evaluate((d) => d.open))) await page.click('#settings summary');
    await page.fill(`#${id}`, String(value));
    await page.locator(`#${id}`).dispatchEvent('change');
  }

  async function sendPrompt(text) {
    await page.fill('#prompt', text);
    await page.press('#prompt', 'Enter');
  }

  // The page's conversation as stored (what it streamed, before markdown).
  async function storedMessages() {
    return page.evaluate(() => {
      const list = JSON.parse(localStorage.getItem('pagedserve.conversations'));
      return list.find((c) => c.id === localStorage.getItem('pagedserve.current')).messages;
    });
  }

  async function health() {
    return (await fetch(`${base()}/health`)).json();
  }

  // The server's own non-streamed chat completion for a generate frame's messages and params.
  async function reference(frame) {
    const res = await fetch(`${base()}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: frame.messages, ...frame.params }),
    });
    assert.equal(res.status, 200);
    return res.json();
  }

  before(async () => {
    mkdirSync(artifacts, { recursive: true });
    server = await startServer(['--api-key', key]);
    port = server.port;
    userDir = mkdtempSync(join(tmpdir(), 'pagedserve-chromium-'));
    context = await chromium.launchPersistentContext(userDir, {
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
        '--disable-sync'],
      viewport: { width: 1200, height: 800 },
    });
    page = context.pages()[0] ?? await context.newPage();
    page.setDefaultTimeout(20000);
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('websocket', (ws) => {
      ws.on('framesent', (f) => sent.push(JSON.parse(f.payload)));
      ws.on('framereceived', (f) => received.push(JSON.parse(f.payload)));
    });
    // Nothing but this server: a fetch elsewhere (a CDN font or script) fails the test.
    await context.route((url) => url.host !== `127.0.0.1:${port}`, (route) => {
      pageErrors.push(`outside fetch: ${route.request().url()}`);
      return route.abort();
    });
  });

  after(async () => {
    await context?.close();
    await server?.stop();
    if (userDir) rmSync(userDir, { recursive: true, force: true });
  });

  test('a wrong API key is shown; the right one connects and names the model', async () => {
    await page.goto(`${base()}/`);
    await setSetting('set-api-key', 'sk-wrong');
    await page.locator('#conn[data-state="unauthorized"]').waitFor();
    assert.match(await page.locator('#banner').innerText(), /rejected the API key/);
    await setSetting('set-api-key', key);
    await page.locator('#conn[data-state="open"]').waitFor();
    assert.equal(await page.locator('#banner').isHidden(), true);
    const models = await (await fetch(`${base()}/v1/models`, { headers: { Authorization: `Bearer ${key}` } })).json();
    await page.locator('#model-name', { hasText: models.data[0].id }).waitFor();
  });

  test('replies stream in and equal the greedy completion of the same messages', async () => {
    await setSetting('set-temperature', 0);
    await setSetting('set-max-tokens', 48);
    await sendPrompt('Once upon a time');
    await lastReply().and(page.locator('[data-state="done"]')).waitFor();
    const first = sent.filter((f) => f.type === 'generate').at(-1);
    assert.deepEqual(first.messages, [{ role: 'user', content: 'Once upon a time' }]);
    assert.equal(first.params.temperature, 0);
    assert.equal(first.params.max_tokens, 48);
    const ref1 = await reference(first);
    const tokens = received.filter((f) => f.id === first.id && f.type === 'token');
    assert.ok(tokens.length >= 2, `streamed in ${tokens.length} frame(s)`);
    assert.equal(tokens.map((f) => f.text).join(''), ref1.choices[0].message.content);
    let stored = await storedMessages();
    assert.equal(stored.at(-1).content, ref1.choices[0].message.content);
    // What is on screen is that text (stories have no markdown; whitespace folds in paragraphs).
    const fold = (s) => s.replace(/\s+/g, ' ').trim();
    assert.equal(fold(await lastReply().locator('.body').innerText()), fold(ref1.choices[0].message.content));
    const meta = await lastReply().locator('.meta').innerText();
    assert.match(meta, new RegExp(`^TTFT \\d+ ms · [\\d.]+ tok/s · ${ref1.usage.completion_tokens} tokens · `));

    // The second turn carries the history.
    await sendPrompt('What happened next?');
    await page.locator('#messages .msg.assistant').nth(1).and(page.locator('[data-state="done"]')).waitFor();
    const second = sent.filter((f) => f.type === 'generate').at(-1);
    assert.deepEqual(second.messages, [{ role: 'user', content: 'Once upon a time' },
      { role: 'assistant', content: ref1.choices[0].message.content }, { role: 'user', content: 'What happened next?' }]);
    const ref2 = await reference(second);
    stored = await storedMessages();
    assert.equal(stored.at(-1).content, ref2.choices[0].message.content);

    // Regenerate asks the last turn again: greedy gives the same reply.
    await page.click('#regenerate');
    await page.locator('#messages .msg.assistant').nth(1).and(page.locator('[data-state="done"]')).waitFor();
    assert.deepEqual(sent.filter((f) => f.type === 'generate').at(-1).messages, second.messages);
    stored = await storedMessages();
    assert.equal(stored.length, 4);
    assert.equal(stored.at(-1).content, ref2.choices[0].message.content);

    const shot = join(artifacts, 'chat.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`# screenshot: ${shot}`);
  });

  test('Stop ends the reply while the server generates; every KV block is freed', async () => {
    // Other clients keep the engine busy so the page's reply is still being generated when Stop
    // is pressed: 40 streams that ignore EOS, each to the end of the context.
    const load = new AbortController();
    const loadDone = Array.from({ length: 40 }, () => fetch(`${base()}/v1/completions`, {
      method: 'POST', signal: load.signal,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true, stream: true }),
    }).then((r) => r.text()).catch(() => null));
    await page.click('#new-chat');
    await setSetting('set-max-tokens', 0);  // to the end of the context
    await setSetting('set-temperature', 1);
    const before = sent.length;
    await sendPrompt('Tell me a long story');
    const id = await (async () => {
      for (;;) {
        const f = sent.slice(before).find((x) => x.type === 'generate');
        if (f && received.some((r) => r.id === f.id && r.type === 'token')) return f.id;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await page.click('#stop');
    assert.equal(await lastReply().getAttribute('data-state'), 'stopped');
    assert.equal(await page.locator('#stop').isDisabled(), true);
    const shown = await lastReply().locator('.body').innerText();
    assert.ok(sent.some((f) => f.type === 'cancel' && f.id === id), 'the page sent a cancel frame');
    for (;;) {  // the server's final frame for the request
      const done = received.find((r) => r.id === id && r.type === 'done');
      if (done) {
        assert.equal(done.finish_reason, 'cancelled', 'the server was still generating when Stop was pressed');
        assert.ok(done.usage.completion_tokens < 500);
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(await lastReply().locator('.body').innerText(), shown, 'tokens after Stop are not shown');
    load.abort();
    await Promise.all(loadDone);
    // The engine drains: nothing running or waiting, every block free (the page's poll shows it too).
    for (;;) {
      const h = await health();
      if (h.running === 0 && h.waiting === 0 && h.kv_blocks_free === h.kv_blocks_total) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await page.waitForFunction(() => {
      const l = document.getElementById('load');
      return document.getElementById('load-running').textContent === '0' && l.dataset.kvFree === l.dataset.kvTotal;
    });
    assert.match(await page.locator('#load-kv').innerText(), /^0% \(0\/\d+ blocks\)$/);
  });

  test('a rejected request is shown plainly', async () => {
    await setSetting('set-max-tokens', 100000);
    await sendPrompt('Hello');
    await lastReply().and(page.locator('[data-state="error"]')).waitFor();
    assert.match(await lastReply().locator('.error').innerText(), /rejected the request: .*max_tokens.*\(invalid_max_tokens\)/);
    await setSetting('set-max-tokens', 48);
    await setSetting('set-temperature', 0);
  });

  test('hostile model output is text, never markup (renderer and streamed path)', async () => {
    // The renderer the page draws every reply with, on hostile input.
    const hostile = ['<script>window.__pwned="s"</script>', '<img src=x onerror="window.__pwned=\'i\'">',
      '**<b onclick=alert(1)>x</b>**', '[x](javascript:window.__pwned=1)', '```\n</code></pre><script>1</script>\n```',
      '> <iframe src="javascript:window.__pwned=2">', '`<svg onload=window.__pwned=3>`', '# <style>*{}</style>'];
    const rendered = await page.evaluate(async (inputs) => {
      const { render_markdown, rendered_tags } = await import('/markdown.js');
      return inputs.map((text) => {
        const box = document.createElement('div');
        box.append(render_markdown(text));
        document.body.append(box);
        const all = [...box.querySelectorAll('*')];
        const out = { text: box.textContent, bad: all.filter((e) => !rendered_tags.includes(e.tagName)).map((e) => e.tagName),
          handlers: all.flatMap((e) => [...e.attributes].map((a) => a.name)).filter((n) => n.startsWith('on')),
          hrefs: all.filter((e) => e.tagName === 'A').map((e) => e.getAttribute('href')) };
        box.remove();
        return out;
      });
    }, hostile);
    for (const [i, r] of rendered.entries()) {
      assert.deepEqual(r.bad, [], hostile[i]);
      assert.deepEqual(r.handlers, [], hostile[i]);
      assert.deepEqual(r.hrefs, [], hostile[i]);
    }
    assert.ok(rendered[0].text.includes('<script>window.__pwned="s"</script>'));

    // The same text arriving as token frames on the page's own WebSocket (the server side of
    // that socket replaced by the test), split mid-tag as a tokenizer would.
    const mocked = await context.newPage();
    mocked.on('pageerror', (e) => pageErrors.push(String(e)));
    let sockets = 0;
    const pieces = ['Here: <scr', 'ipt>window.__pwned="s"</script> and <img src=x onerr', 'or="window.__pwned=\'i\'">\n\n',
      '```html\n<b>bold?</b><svg onload=alert(1)>\n```\n', '**strong** [link](javascript:window.__pwned=1)'];
    await mocked.routeWebSocket(/\/v1\/ws$/, (ws) => {
      sockets += 1;
      ws.onMessage((data) => {
        const f = JSON.parse(data);
        if (f.type !== 'generate') return;
        if (f.messages.at(-1).content === 'drop') {  // one token, then the connection is gone
          ws.send(JSON.stringify({ type: 'token', id: f.id, text: 'Partial', token_ids: [1] }));
          ws.close({ code: 1011, reason: 'test drop' });
          return;
        }
        for (const text of pieces) ws.send(JSON.stringify({ type: 'token', id: f.id, text, token_ids: [1] }));
        ws.send(JSON.stringify({ type: 'done', id: f.id, finish_reason: 'stop',
          usage: { prompt_tokens: 3, completion_tokens: pieces.length, total_tokens: 3 + pieces.length },
          timings: { ttft_ms: 1, total_ms: 2, tokens_per_second: 100 } }));
      });
    });
    await mocked.goto(`${base()}/`);
    await mocked.locator('#conn[data-state="open"]').waitFor();
    await mocked.click('#new-chat');
    await mocked.fill('#prompt', 'show me some html');
    await mocked.press('#prompt', 'Enter');
    const reply = mocked.locator('#messages .msg.assistant').last();
    await reply.and(mocked.locator('[data-state="done"]')).waitFor();
    const dom = await reply.locator('.body').evaluate((body) => ({
      text: body.textContent,
      tags: [...body.querySelectorAll('*')].map((e) => e.tagName),
      code: body.querySelector('pre > code')?.textContent,
      strong: body.querySelector('strong')?.textContent,
      pwned: window.__pwned ?? null,
    }));
    assert.equal(dom.pwned, null);
    assert.ok(dom.text.includes('<script>window.__pwned="s"</script>'), dom.text);
    assert.ok(dom.text.includes('<img src=x onerror="window.__pwned=\'i\'">'), dom.text);
    assert.equal(dom.code, '<b>bold?</b><svg onload=alert(1)>');  // drawn by the markdown renderer
    assert.equal(dom.strong, 'strong');
    for (const tag of ['SCRIPT', 'IMG', 'SVG', 'B', 'IFRAME', 'A']) assert.ok(!dom.tags.includes(tag), `${tag} in ${dom.tags}`);
    assert.equal(await mocked.evaluate(() => document.querySelectorAll('script:not([src]), img').length), 0);

    // A connection dropped mid-reply: the reply says so, and the page opens a new socket by itself.
    await mocked.fill('#prompt', 'drop');
    await mocked.press('#prompt', 'Enter');
    await reply.and(mocked.locator('[data-state="error"]')).waitFor();
    assert.match(await reply.locator('.error').innerText(), /lost during this reply/);
    assert.equal(await reply.locator('.body').innerText(), 'Partial');
    // The indicator may still show the old socket as open: wait for the second socket itself.
    const reconnected_by = Date.now() + 15000;
    while (sockets < 2 && Date.now() < reconnected_by) await new Promise((resolve) => setTimeout(resolve, 20));
    await mocked.locator('#conn[data-state="open"]').waitFor();
    assert.equal(sockets, 2);
    await mocked.close();
  });

  test('the server going down is shown, and the page reconnects when it is back', async () => {
    await page.bringToFront();
    await server.stop();
    await page.locator('#conn[data-state="waiting"]').waitFor();
    assert.match(await page.locator('#banner').innerText(), /not reachable.*Reconnecting automatically/);
    assert.equal(await page.locator('#send').isDisabled(), true);
    await page.locator('#load[data-state="down"]').waitFor();
    server = await startServer(['--api-key', key, '--port', String(port)]);
    await page.locator('#conn[data-state="open"]').waitFor();
    assert.equal(await page.locator('#banner').isHidden(), true);
    await sendPrompt('Once upon a time');
    await lastReply().and(page.locator('[data-state="done"]')).waitFor();
    const frame = sent.filter((f) => f.type === 'generate').at(-1);
    const ref = await reference(frame);
    assert.equal((await storedMessages()).at(-1).content, ref.choices[0].message.content);
    assert.deepEqual(pageErrors, []);
  });
});
