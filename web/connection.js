// The page's one WebSocket to /v1/ws, reopened by itself with backoff when it closes.
//
// A browser cannot set Authorization on a WebSocket, so the API key travels as the subprotocol
// "bearer.<base64url(key)>" next to "pagedserve" (the one the server selects). A refused upgrade
// looks the same to a page as a server that is down, so after a failure the page asks
// GET /v1/models with the key over plain HTTP: a 401 there means the key is wrong, a network
// error that the server is unreachable.
//
// States reported to on_state(state, detail):
//   'connecting'   first attempt, or a retry in progress
//   'open'         ready for generate frames
//   'waiting'      closed; detail = {reason, retry_ms} until the next attempt
//   'unauthorized' the server refuses the key; retried (slowly) and at once when the key changes

const backoff_ms = [500, 1000, 2000, 4000, 8000];
const unauthorized_retry_ms = 10000;

function base64url(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function auth_headers(key) {
  return key ? { Authorization: `Bearer ${key}` } : {};
}

export class connection {
  // get_key() -> the API key now; on_frame(msg) gets each parsed server frame; on_lost() is told
  // when an open socket closes (replies in flight are lost with it).
  constructor({ get_key, on_frame, on_state, on_lost }) {
    Object.assign(this, { get_key, on_frame, on_state, on_lost });
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
  }

  url() {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}/v1/ws`;
  }

  start() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.ws) {
      const old = this.ws;
      this.ws = null;
      old.onopen = old.onclose = old.onmessage = old.onerror = null;
      const was_open = old.readyState === WebSocket.OPEN;
      old.close();
      if (was_open) this.on_lost();
    }
    this.on_state('connecting', { attempt: this.attempt });
    const key = this.get_key();
    const protocols = key ? ['pagedserve', `bearer.${base64url(key)}`] : ['pagedserve'];
    const ws = new WebSocket(this.url(), protocols);
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.on_state('open', {});
    };
    ws.onmessage = (event) => {
      let msg;
      try {
        msg = JSON.parse(event.data);
      } catch {
        return;
      }
      this.on_frame(msg);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (opened) this.on_lost();
      this.diagnose_and_retry(opened);
    };
  }

  // Why the socket closed or would not open, then the next attempt after a backoff.
  async diagnose_and_retry(was_open) {
    let reason = was_open ? 'The connection to the server was lost.' : 'Cannot reach the server.';
    let unauthorized = false;
    try {
      const res = await fetch('/v1/models', { headers: auth_headers(this.get_key()), cache: 'no-store' });
      if (res.status === 401) unauthorized = true;
      else if (!res.ok) reason = `The server answered ${res.status} ${res.statusText}.`;
    } catch {
      reason = 'The server is not reachable (is it running?).';
    }
    if (this.ws || this.timer) return;  // restarted meanwhile
    const retry_ms = unauthorized ? unauthorized_retry_ms : backoff_ms[Math.min(this.attempt, backoff_ms.length - 1)];
    this.attempt += 1;
    if (unauthorized) this.on_state('unauthorized', { retry_ms });
    else this.on_state('waiting', { reason, retry_ms });
    this.timer = setTimeout(() => {
      this.timer = null;
      this.start();
    }, retry_ms);
  }

  // Opens anew at once (the API key changed, or the user asked).
  restart() {
    this.attempt = 0;
    this.start();
  }

  // Sends a frame; false when the socket is not open.
  send(frame) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }
}
