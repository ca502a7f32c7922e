/**
 * Text of a LangChain message content, which is either a string or an array of content
 * blocks (text, image_url, …). Never `String(content)`: on an array that yields
 * "[object Object]", which once became a memory search query in a seed system.
 */
export type MessageContent = string | ReadonlyArray<unknown>;

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return textParts(content).join(' ').trim();
}

/**
 * The text of one streamed chunk, string or array of parts (Anthropic streams
 * `[{ type: 'text', text, index }]`): its text parts exactly as they came, neither joined
 * with spaces nor trimmed, since a token's own spaces matter. Parts without text — tool
 * arguments (`input_json_delta`), thinking, images — add nothing.
 */
export function deltaTextOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return textParts(content).join('');
}

function textParts(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  const parts: string[] = [];
  for (const block of content) {
    if (typeof block === 'string') parts.push(block);
    else if (block && typeof block === 'object') {
      const record = block as Record<string, unknown>;
      if ((record.type === 'text' || record.type === undefined) && typeof record.text === 'string') parts.push(record.text);
    }
  }
  return parts;
}

/** A short single-line preview of a message's text, for thread lists and logs. */
export function previewOf(content: unknown, maxChars = 120): string {
  // Control characters go too: a model may write U+0000, which PostgreSQL's text refuses.
  const text = textOf(content).replace(/[\u0000-\u0008\u000e-\u001f\u007f]/g, '').replace(/\s+/g, ' ').trim();
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
