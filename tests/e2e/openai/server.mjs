// The server for the openai client tests (started by tests/support/server.mjs), and its WebSocket
// API for comparisons.
import WebSocket from 'ws';

export { binary, skipReason, startServer } from '../../support/server.mjs';

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
