// Starts the real `pagedserve serve` on 127.0.0.1 for the node tests (tests/e2e/openai,
// tests/browser). No npm dependencies. The server binary comes from the environment CTest sets
// (PAGEDSERVE_BINARY), else from this checkout's layout; the model is the repository's (tests/data).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
export const binary = process.env.PAGEDSERVE_BINARY ?? join(repo, 'build', 'pagedserve');
const model = join(repo, 'tests', 'data', 'models', 'stories260K.bin');
const tokenizer = join(repo, 'tests', 'data', 'models', 'tok512.bin');
// Deadlines on the server stretch by PAGEDSERVE_TEST_TIME_SCALE (>= 1), as in tests/support/sanitizer_env.hpp.
const scale = Math.min(Math.max(Number(process.env.PAGEDSERVE_TEST_TIME_SCALE) || 1, 1), 100);
export const scaled = (ms) => Math.round(ms * scale);
// A sanitizer report in the server's stderr, from its header line on, or null.
export function sanitizerReport(log) {
  const m = /^.*(ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|runtime error: )[\s\S]{0,6000}/m.exec(log);
  return m ? m[0] : null;
}

// Why the tests cannot run here, or null when they can.
export function skipReason() {
  if (!existsSync(model) || !existsSync(tokenizer)) return `test data absent: skipping (needs ${model})`;
  if (!existsSync(binary)) return `no server binary at ${binary}: build first`;
  return null;
}

// Resolves to { port, log(), stop() } once the server logs its port; rejects if it exits or is
// silent for 15 s. Later flags in extraArgs win, so ['--port', N] restarts on a known port. stop()
// rejects when the server's stderr holds a sanitizer report.
export function startServer(extraArgs = []) {
  const child = spawn(binary, ['serve', '--model', model, '--tokenizer', tokenizer, '--host', '127.0.0.1',
    '--port', '0', '--log-level', 'info', ...extraArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`server did not start:\n${log}`)); }, scaled(15000));
    child.stderr.on('data', (data) => {
      log += data;
      const m = /serving '.*' .*on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m && timer) {
        clearTimeout(timer);
        resolvePromise({
          port: Number(m[1]),
          log: () => log,
          stop: () => new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once('close', done);  // after stderr is read to its end (a leak report comes last)
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), scaled(3000)).unref();
          }).then(() => {
            const report = sanitizerReport(log);
            if (report) throw new Error(`pagedserve serve: sanitizer report:\n${report}`);
          }),
        });
      }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}):\n${log}`)); });
  });
}
