// Starts the real `pagedserve serve` on 127.0.0.1 and an ephemeral port for the tests, and talks
// to its WebSocket API for comparisons. Paths come from the environment CTest sets
// (PAGEDSERVE_BINARY, PAGEDSERVE_SHARED_DIR), else from this checkout's layout.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
export const binary = process.env.PAGEDSERVE_BINARY ?? join(repo, 'build', 'pagedserve');
export const sharedDir = process.env.PAGEDSERVE_SHARED_DIR ?? join(repo, '..', 'shared');
const model = join(sharedDir, 'models', 'stories260K.bin');
const tokenizer = join(sharedDir, 'models', 'tok512.bin');

// Why the tests cannot run here, or null when they can.
export function skipReason() {
  if (!existsSync(model) || !existsSync(tokenizer)) return `../shared is absent: skipping (needs ${model})`;
  if (!existsSync(binary)) return `no server binary at ${binary}: build first`;
  return null;
}

// Resolves to { port, stop() } once the server logs its port; rejects if it exits or is silent for 15 s.
export function startServer(extraArgs = []) {
  const child = spawn(binary, ['serve', '--model', model, '--tokenizer', tokenizer, '--host', '127.0.0.1',
    '--port', '0', '--log-level', 'info', ...extraArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`server did not start:\n${log}`)); }, 15000);
    child.stderr.on('data', (data) => {
      log += data;
      const m = /serving '.*' .*on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m && timer) {
        clearTimeout(timer);
        resolvePromise({
          port: Number(m[1]),
          log: () => log,
          stop: () => new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', done);
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 3000).unref();
          }),
        });
      }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}):\n${log}`)); });
  });
}

// One generate request over /v1/ws: resolves to { text, tokenIds, logprobs, done } at its done frame.
export function websocketGenerate(port, frame, headers = {}) {
  return new Promise((resolvePromise, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`, { headers });
    const out = { text: '', tokenIds: [], logprobs: [], done: null };
    const timer = setTimeout(() => { ws.terminate(); reject(new Error('websocket request timed out')); }, 30000);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'generate', id: 'cmp', ...frame })));
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg.type === 'token') {
        out.text += msg.text;
        out.tokenIds.push(...msg.token_ids);
        if (msg.logprobs) out.logprobs.push(...msg.logprobs);
      } else if (msg.type === 'done') {
        out.done = msg;
        clearTimeout(timer);
        ws.close();
        resolvePromise(out);
      } else {
        clearTimeout(timer);
        ws.close();
        reject(new Error(`websocket error frame: ${data}`));
      }
    });
    ws.on('error', (e) => { clearTimeout(timer); reject(e); });
  });
}
