// The chat page's richer drawing and tools in Debian's chromium, against the real server (stories260K):
// markdown tables and nested lists; a fenced code block's Copy button puts the code's text on the
// clipboard; editing a sent message drops the turns after it and asks again (the reply equals the
// server's greedy completion of the edited history); a reply's reasoning (token frames' "reasoning",
// the done frame's whole text) is drawn folded above it; a conversation exports as JSON and Markdown;
// hostile text in tables, lists and reasoning stays text.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { skipReason, startServer } from '../support/server.mjs';

const chromiumPath = '/usr/bin/chromium';
const reason = skipReason() ?? (existsSync(chromiumPath) ? null : `no ${chromiumPath}: skipping (scripts/install-deps.sh installs it)`);
if (reason) console.log(`# SKIP: ${reason}`);

describe('chat page features in chromium', { skip: reason ?? false }, () => {
  let server, port, context, page, userDir;
  const pageErrors = [];
  const sent = [];
  const base = () => `http://127.0.0.1:${port}`;

  // What render_markdown draws for text: the tags in order, the text, and anything unsafe.
  async function drawn(text) {
    return page.evaluate(async (input) => {
      const { render_markdown, rendered_tags } = await import('/markdown.js');
      const box = document.createElement('div');
      box.append(render_markdown(input));
      document.body.append(box);
      const all = [...box.querySelectorAll('*')];
      const out = {
        html_free: all.every((e) => rendered_tags.includes(e.tagName)),
        handlers: all.flatMap((e) => [...e.attributes].map((a) => a.name)).filter((n) => n.startsWith('on')),
        tables: [...box.querySelectorAll('table')].map((t) => [...t.rows].map((r) => [...r.cells].map((c) => c.textContent))),
        aligns: [...box.querySelectorAll('th')].map((c) => c.style.textAlign),
        // Each list as its items' own text and the lists nested in them.
        lists: [...box.children].filter((e) => e.tagName === 'UL' || e.tagName === 'OL').map(function tree(list) {
          return { tag: list.tagName, items: [...list.children].map((li) => ({
            text: [...li.childNodes].filter((n) => n.nodeType === 3 || !['UL', 'OL'].includes(n.tagName)).map((n) => n.textContent).join(''),
            sub: [...li.children].filter((e) => e.tagName === 'UL' || e.tagName === 'OL').map(tree) })) };
        }),
        text: box.textContent,
      };
      box.remove();
      return out;
    }, text);
  }

  before(async () => {
    server = await startServer();
    port = server.port;
    userDir = mkdtempSync(join(tmpdir(), 'pagedserve-chromium-'));
    context = await chromium.launchPersistentContext(userDir, {
      executablePath: chromiumPath, headless: true, acceptDownloads: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1200, height: 800 },
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base() });
    page = context.pages()[0] ?? await context.newPage();
    page.setDefaultTimeout(20000);
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('websocket', (ws) => ws.on('framesent', (f) => sent.push(JSON.parse(f.payload))));
    await context.route((url) => url.host !== `127.0.0.1:${port}`, (route) => {
      pageErrors.push(`outside fetch: ${route.request().url()}`);
      return route.abort();
    });
    await page.goto(`${base()}/`);
    await page.locator('#conn[data-state="open"]').waitFor();
  });

  after(async () => {
    await context?.close();
    await server?.stop();
    if (userDir) rmSync(userDir, { recursive: true, force: true });
  });

  test('tables, aligned, with inline markdown and hostile cells as text', async () => {
    const d = await drawn('Scores:\n\n| name | score | note |\n|:--|--:|:-:|\n| **Ann** | 3 | <img src=x onerror=alert(1)> |\n| Bob | 10 | a \\| b |\n\nafter');
    assert.deepEqual(d.tables, [[['name', 'score', 'note'], ['Ann', '3', '<img src=x onerror=alert(1)>'], ['Bob', '10', 'a | b']]]);
    assert.deepEqual(d.aligns, ['left', 'right', 'center']);
    assert.ok(d.html_free);
    assert.deepEqual(d.handlers, []);
    assert.ok(d.text.startsWith('Scores:') && d.text.endsWith('after'));
    assert.deepEqual((await drawn('a | b\nnot a rule')).tables, [], 'a pipe alone makes no table');
  });

  test('lists nest by indentation, bullets in numbers and back', async () => {
    const d = await drawn('1. first\n   - inner a\n   - inner b\n     1. deep\n2. second\n- other list');
    assert.deepEqual(d.lists, [
      { tag: 'OL', items: [
        { text: 'first', sub: [{ tag: 'UL', items: [{ text: 'inner a', sub: [] },
          { text: 'inner b', sub: [{ tag: 'OL', items: [{ text: 'deep', sub: [] }] }] }] }] },
        { text: 'second', sub: [] }] },
      { tag: 'UL', items: [{ text: 'other list', sub: [] }] }]);
    const tabs = await drawn('- a\n\t- b <script>x</script>');
    assert.equal(tabs.lists[0].items[0].sub[0].items[0].text, 'b <script>x</script>');
    assert.ok(tabs.html_free);
  });

  test('a code block\'s Copy button copies its text', async () => {
    const code = 'for i in range(3):\n    print("<b>%d</b>" % i)';
    await page.evaluate(async (text) => {
      const { render_markdown } = await import('/markdown.js');
      const box = document.createElement('div');
      box.id = 'copy-test';
      box.append(render_markdown(`Here:\n\n\`\`\`python\n${text}\n\`\`\``));
      document.body.append(box);
    }, code);
    await page.click('#copy-test .code-block .copy');
    await page.locator('#copy-test .copy', { hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), code);
    await page.evaluate(() => document.getElementById('copy-test').remove());
  });

  test('editing a sent message drops what followed and asks again', async () => {
    await page.click('#new-chat');
    await page.click('#settings summary');
    for (const [id, value] of [['set-temperature', 0], ['set-max-tokens', 24]]) {
      await page.fill(`#${id}`, String(value));
      await page.locator(`#${id}`).dispatchEvent('change');
    }
    const replies = page.locator('#messages .msg.assistant');
    for (const [n, text] of [[1, 'Once upon a time'], [2, 'Then what?']]) {
      await page.fill('#prompt', text);
      await page.press('#prompt', 'Enter');
      await replies.nth(n - 1).and(page.locator('[data-state="done"]')).waitFor();
    }
    await page.locator('#messages .msg.user').first().locator('.edit').click();
    await page.locator('#messages .msg.user .editor textarea').fill('One day, a little dog');
    await page.locator('#messages .msg.user .editor .save').click();
    await replies.first().and(page.locator('[data-state="done"]')).waitFor();
    assert.equal(await replies.count(), 1, 'the later turns are gone');
    const frame = sent.filter((f) => f.type === 'generate').at(-1);
    assert.deepEqual(frame.messages, [{ role: 'user', content: 'One day, a little dog' }]);
    const ref = await (await fetch(`${base()}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: frame.messages, ...frame.params }),
    })).json();
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('pagedserve.conversations'))
      .find((c) => c.id === localStorage.getItem('pagedserve.current')).messages);
    assert.deepEqual(stored.map((m) => [m.role, m.content]),
      [['user', 'One day, a little dog'], ['assistant', ref.choices[0].message.content]]);
  });

  test('a conversation exports as JSON and as Markdown', async () => {
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('pagedserve.conversations'))
      .find((c) => c.id === localStorage.getItem('pagedserve.current')));
    const [json_download] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    assert.match(json_download.suggestedFilename(), /\.json$/);
    const exported = JSON.parse(readFileSync(await json_download.path(), 'utf8'));
    assert.deepEqual(exported.messages, stored.messages.map(({ role, content }) => ({ role, content })));
    assert.equal(exported.model, 'stories260K');
    const [md_download] = await Promise.all([page.waitForEvent('download'), page.click('#export-md')]);
    assert.match(md_download.suggestedFilename(), /\.md$/);
    const md = readFileSync(await md_download.path(), 'utf8');
    assert.ok(md.includes(`## You\n\n${stored.messages[0].content}\n`), md);
    assert.ok(md.includes(`## Assistant\n\n${stored.messages[1].content}\n`), md);
  });

  test('reasoning is folded above the reply, streamed and then whole; hostile reasoning is text', async () => {
    const mocked = await context.newPage();
    mocked.on('pageerror', (e) => pageErrors.push(String(e)));
    const thinking = ['The user wants ', 'a story. <img src=x onerror="window.__pwned=1">', '\n\n| a | b |\n|---|---|\n| 1 | 2 |'];
    await mocked.routeWebSocket(/\/v1\/ws$/, (ws) => {
      ws.onMessage((data) => {
        const f = JSON.parse(data);
        if (f.type !== 'generate') return;
        for (const r of thinking) ws.send(JSON.stringify({ type: 'token', id: f.id, text: '', reasoning: r, token_ids: [1] }));
        ws.send(JSON.stringify({ type: 'token', id: f.id, text: 'Once upon a time.', token_ids: [2] }));
        ws.send(JSON.stringify({ type: 'done', id: f.id, finish_reason: 'stop', reasoning: thinking.join(''),
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }, timings: { ttft_ms: 1, tokens_per_second: 10 } }));
      });
    });
    await mocked.goto(`${base()}/`);
    await mocked.locator('#conn[data-state="open"]').waitFor();
    await mocked.click('#new-chat');
    await mocked.fill('#prompt', 'a story please');
    await mocked.press('#prompt', 'Enter');
    const reply = mocked.locator('#messages .msg.assistant').last();
    await reply.and(mocked.locator('[data-state="done"]')).waitFor();
    const fold = reply.locator('details.reasoning');
    assert.equal(await fold.isVisible(), true);
    assert.equal(await fold.evaluate((d) => d.open), false, 'folded by default');
    assert.equal(await reply.locator('.body').innerText(), 'Once upon a time.');
    await fold.locator('summary').click();
    const inside = await fold.locator('.reasoning-body').evaluate((b) => ({
      text: b.textContent, tags: [...b.querySelectorAll('*')].map((e) => e.tagName), pwned: window.__pwned ?? null }));
    assert.ok(inside.text.includes('The user wants a story. <img src=x onerror="window.__pwned=1">'), inside.text);
    assert.ok(inside.tags.includes('TABLE') && !inside.tags.includes('IMG'), inside.tags.join());
    assert.equal(inside.pwned, null);
    const stored = await mocked.evaluate(() => JSON.parse(localStorage.getItem('pagedserve.conversations'))
      .find((c) => c.id === localStorage.getItem('pagedserve.current')).messages.at(-1));
    assert.equal(stored.reasoning, thinking.join(''));
    await mocked.close();
    assert.deepEqual(pageErrors, []);
  });
});
