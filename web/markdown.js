// Markdown for model replies, built as DOM nodes. Model text only ever becomes Text nodes
// (createTextNode): nothing here parses HTML, so markup in a reply (<script>, <img onerror=...>)
// is shown as the characters it is and can never run. Links get an href only for http(s) URLs.
//
// What is understood: fenced code blocks (``` or ~~~, an unclosed fence while a reply streams runs
// to the end) with a Copy button, headings, lists (-, *, + and 1.) nested by indentation, pipe tables
// (GitHub's, with :--: alignment), block quotes, rules, paragraphs with line breaks, and inline `code`,
// **bold**, *emphasis* and [links](https://...).

const fence_re = /^\s*(`{3,}|~{3,})\s*([\w+.#-]*)\s*$/;
const heading_re = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const rule_re = /^\s*([-*_])(\s*\1){2,}\s*$/;
const bullet_re = /^\s*[-*+]\s+(.*)$/;
const ordered_re = /^\s*(\d{1,9})[.)]\s+(.*)$/;
const quote_re = /^\s*>\s?(.*)$/;
const table_rule_re = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
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

const indent_of = (line) => line.length - line.trimStart().length;

// A list item's line: its indentation, kind, number and text; null for other lines.
function list_item(line) {
  let m = bullet_re.exec(line);
  if (m) return { indent: indent_of(line), ordered: false, text: m[1] };
  m = ordered_re.exec(line);
  return m ? { indent: indent_of(line), ordered: true, number: Number(m[1]), text: m[2] } : null;
}

// A list from lines[i] on; items at its indentation, and under each the lines indented deeper (nested
// lists, continued text) drawn as blocks of their own. Returns the index after the list.
function render_list(doc, parent, lines, i) {
  const first = list_item(lines[i]);
  const list = el(doc, first.ordered ? 'ol' : 'ul');
  if (first.ordered && first.number !== 1) list.start = first.number;
  while (i < lines.length) {
    const item = list_item(lines[i]);
    if (!item || item.indent !== first.indent || item.ordered !== first.ordered) break;
    const li = el(doc, 'li');
    render_inline(doc, li, item.text);
    const inner = [];
    for (i += 1; i < lines.length && lines[i].trim() !== '' && indent_of(lines[i]) > first.indent; i += 1) inner.push(lines[i]);
    if (inner.length) {
      const cut = Math.min(...inner.map(indent_of));
      render_blocks(doc, li, inner.map((l) => l.slice(cut)));
    }
    list.append(li);
  }
  parent.append(list);
  return i;
}

// A table row's cells: the text between pipes (a leading and a trailing pipe are optional; \| is a pipe).
function table_cells(line) {
  let t = line.trim();
  if (t.startsWith('|')) t = t.slice(1);
  if (t.endsWith('|') && !t.endsWith('\\|')) t = t.slice(0, -1);
  return t.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
}

function is_table_start(lines, i) {
  return lines[i].includes('|') && i + 1 < lines.length && lines[i + 1].includes('|') && table_rule_re.test(lines[i + 1]);
}

// A pipe table from lines[i] (header) and lines[i + 1] (alignment) on; returns the index after it.
function render_table(doc, parent, lines, i) {
  const header = table_cells(lines[i]);
  const align = table_cells(lines[i + 1]).map((c) => (c.endsWith(':') ? (c.startsWith(':') ? 'center' : 'right') : c.startsWith(':') ? 'left' : ''));
  const table = el(doc, 'table');
  const row_of = (cells, tag) => {
    const tr = el(doc, 'tr');
    header.forEach((_, k) => {
      const cell = el(doc, tag);
      render_inline(doc, cell, cells[k] ?? '');
      if (align[k]) cell.style.textAlign = align[k];
      tr.append(cell);
    });
    return tr;
  };
  const head = el(doc, 'thead');
  head.append(row_of(header, 'th'));
  const body = el(doc, 'tbody');
  for (i += 2; i < lines.length && lines[i].trim() !== '' && lines[i].includes('|'); i += 1) body.append(row_of(table_cells(lines[i]), 'td'));
  table.append(head, body);
  parent.append(table);
  return i;
}

// A fenced code block with a button copying its text (the clipboard gets the text, never markup).
function code_block(doc, text, lang) {
  const box = el(doc, 'div');
  box.className = 'code-block';
  const copy = el(doc, 'button', 'Copy');
  copy.type = 'button';
  copy.className = 'copy';
  copy.title = 'Copy the code';
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      copy.textContent = 'Copied';
    } catch {
      copy.textContent = 'Copy failed';
    }
    setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
  });
  const pre = el(doc, 'pre');
  const code = el(doc, 'code', text);
  if (lang) code.dataset.lang = lang;
  pre.append(code);
  box.append(copy, pre);
  return box;
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
      parent.append(code_block(doc, body.join('\n'), m[2]));
    } else if ((m = heading_re.exec(line))) {
      const h = el(doc, `h${Math.min(m[1].length + 2, 6)}`);
      render_inline(doc, h, m[2]);
      parent.append(h);
      i += 1;
    } else if (rule_re.test(line)) {
      parent.append(el(doc, 'hr'));
      i += 1;
    } else if (list_item(line)) {
      i = render_list(doc, parent, lines, i);
    } else if (is_table_start(lines, i)) {
      i = render_table(doc, parent, lines, i);
    } else if (quote_re.test(line)) {
      const inner = [];
      for (; i < lines.length && (m = quote_re.exec(lines[i])); i += 1) inner.push(m[1]);
      const quote = el(doc, 'blockquote');
      render_blocks(doc, quote, inner);
      parent.append(quote);
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() !== '' && (para.length === 0 || !(starts_block(lines[i]) || is_table_start(lines, i))); i += 1)
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
  const lines = String(text).replace(/\r\n?/g, '\n').split('\n').map((l) => l.replace(/^\t+/, (t) => '    '.repeat(t.length)));
  render_blocks(doc, fragment, lines);
  return fragment;
}

// The elements render_markdown may create: the browser test checks that nothing else appears.
export const rendered_tags = Object.freeze(['P', 'BR', 'PRE', 'CODE', 'STRONG', 'EM', 'A', 'H3', 'H4', 'H5', 'H6',
  'HR', 'UL', 'OL', 'LI', 'BLOCKQUOTE', 'DIV', 'BUTTON', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD']);
