// Markdown for model replies, built as DOM nodes. Model text only ever becomes Text nodes
// (createTextNode): nothing here parses HTML, so markup in a reply (<script>, <img onerror=...>)
// is shown as the characters it is and can never run. Links get an href only for http(s) URLs.
//
// What is understood: fenced code blocks (``` or ~~~, an unclosed fence while a reply streams runs
// to the end), headings, lists (-, *, + and 1.), block quotes, rules, paragraphs with line breaks,
// and inline `code`, **bold**, *emphasis* and [links](https://...).

const fence_re = /^\s*(`{3,}|~{3,})\s*([\w+.#-]*)\s*$/;
const heading_re = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const rule_re = /^\s*([-*_])(\s*\1){2,}\s*$/;
const bullet_re = /^\s*[-*+]\s+(.*)$/;
const ordered_re = /^\s*(\d{1,9})[.)]\s+(.*)$/;
const quote_re = /^\s*>\s?(.*)$/;
// Inline spans, earliest first: code, bold, emphasis, link.
const inline_re = /`([^`\n]+)`|\*\*([^*\n]+?)\*\*|\*([^*\s\n](?:[^*\n]*[^*\s\n])?)\*|\[([^\]\n]+)\]\(([^)\s]+)\)/g;

function el(doc, tag, text) {
  const node = doc.createElement(tag);
  if (text !== undefined) node.textContent = text;
  return node;
}

function safe_http_url(href) {
  try {
    const url = new URL(href);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

// Appends text's inline spans to parent.
function render_inline(doc, parent, text) {
  let at = 0;
  inline_re.lastIndex = 0;
  for (let m = inline_re.exec(text); m; m = inline_re.exec(text)) {
    if (m.index > at) parent.append(doc.createTextNode(text.slice(at, m.index)));
    if (m[1] !== undefined) {
      parent.append(el(doc, 'code', m[1]));
    } else if (m[2] !== undefined) {
      parent.append(el(doc, 'strong', m[2]));
    } else if (m[3] !== undefined) {
      parent.append(el(doc, 'em', m[3]));
    } else {
      const href = safe_http_url(m[5]);
      if (href) {
        const a = el(doc, 'a', m[4]);
        a.href = href;
        a.rel = 'noopener noreferrer nofollow';
        a.target = '_blank';
        parent.append(a);
      } else {
        parent.append(doc.createTextNode(m[0]));
      }
    }
    at = m.index + m[0].length;
  }
  if (at < text.length) parent.append(doc.createTextNode(text.slice(at)));
}

// Lines joined by <br>, each with its inline spans.
function render_lines(doc, parent, lines) {
  lines.forEach((line, i) => {
    if (i > 0) parent.append(el(doc, 'br'));
    render_inline(doc, parent, line);
  });
}

function starts_block(line) {
  return fence_re.test(line) || heading_re.test(line) || rule_re.test(line) || bullet_re.test(line) ||
    ordered_re.test(line) || quote_re.test(line);
}

function render_blocks(doc, parent, lines) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (line.trim() === '') {
      i += 1;
    } else if ((m = fence_re.exec(line))) {
      const marker = m[1];
      const body = [];
      for (i += 1; i < lines.length && !(lines[i].trim().startsWith(marker) && lines[i].trim().replace(/[`~]/g, '') === ''); i += 1)
        body.push(lines[i]);
      i += 1;  // the closing fence, or past the end
      const pre = el(doc, 'pre');
      const code = el(doc, 'code', body.join('\n'));
      if (m[2]) code.dataset.lang = m[2];
      pre.append(code);
      parent.append(pre);
    } else if ((m = heading_re.exec(line))) {
      const h = el(doc, `h${Math.min(m[1].length + 2, 6)}`);
      render_inline(doc, h, m[2]);
      parent.append(h);
      i += 1;
    } else if (rule_re.test(line)) {
      parent.append(el(doc, 'hr'));
      i += 1;
    } else if (bullet_re.test(line) || ordered_re.test(line)) {
      const ordered = !bullet_re.test(line);
      const re = ordered ? ordered_re : bullet_re;
      const list = el(doc, ordered ? 'ol' : 'ul');
      if (ordered) {
        const start = Number(ordered_re.exec(line)[1]);
        if (start !== 1) list.start = start;
      }
      for (; i < lines.length && (m = re.exec(lines[i])); i += 1) {
        const li = el(doc, 'li');
        render_inline(doc, li, ordered ? m[2] : m[1]);
        list.append(li);
      }
      parent.append(list);
    } else if (quote_re.test(line)) {
      const inner = [];
      for (; i < lines.length && (m = quote_re.exec(lines[i])); i += 1) inner.push(m[1]);
      const quote = el(doc, 'blockquote');
      render_blocks(doc, quote, inner);
      parent.append(quote);
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() !== '' && (para.length === 0 || !starts_block(lines[i])); i += 1)
        para.push(lines[i]);
      const p = el(doc, 'p');
      render_lines(doc, p, para);
      parent.append(p);
    }
  }
}

// The reply text as a DocumentFragment of safe nodes.
export function render_markdown(text, doc = document) {
  const fragment = doc.createDocumentFragment();
  render_blocks(doc, fragment, String(text).replace(/\r\n?/g, '\n').split('\n'));
  return fragment;
}

// The elements render_markdown may create: the browser test checks that nothing else appears.
export const rendered_tags = Object.freeze(['P', 'BR', 'PRE', 'CODE', 'STRONG', 'EM', 'A', 'H3', 'H4', 'H5', 'H6',
  'HR', 'UL', 'OL', 'LI', 'BLOCKQUOTE']);
