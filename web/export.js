// A conversation saved as a file the user downloads: JSON (every message as stored, for tools) or
// Markdown (for reading). Built from the stored text as a Blob; nothing of it is drawn in the page.

function file_name(conv, extension) {
  const stem = String(conv.title || 'conversation').replace(/[^\w.-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60);
  return `${stem || 'conversation'}.${extension}`;
}

// {title, model, exported, messages: [{role, content, reasoning?}]}.
export function conversation_json(conv, model) {
  const messages = conv.messages
    .filter((m) => m.role === 'user' || m.content || m.reasoning)
    .map((m) => (m.reasoning ? { role: m.role, content: m.content, reasoning: m.reasoning } : { role: m.role, content: m.content }));
  return JSON.stringify({ title: conv.title, model, exported: new Date().toISOString(), messages }, null, 2);
}

// One heading per turn; a reply's reasoning as a quote before it.
export function conversation_markdown(conv, model) {
  const parts = [`# ${conv.title}`, '', `*Model: ${model || 'unknown'}; exported ${new Date().toISOString()}*`, ''];
  for (const m of conv.messages) {
    if (m.role !== 'user' && !m.content && !m.reasoning) continue;
    parts.push(`## ${m.role === 'user' ? 'You' : 'Assistant'}`, '');
    if (m.reasoning) parts.push(...m.reasoning.split('\n').map((l) => `> ${l}`), '');
    parts.push(m.content, '');
  }
  return parts.join('\n');
}

// Offers text as a download named after the conversation.
export function download(conv, extension, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = file_name(conv, extension);
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
