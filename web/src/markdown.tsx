import DOMPurify from 'dompurify';
import { marked } from 'marked';

/**
 * Model and webhook text rendered as markdown, then sanitised: a <script>, an
 * <img onerror> or a javascript: link in the text comes out inert, and an image from
 * anywhere but the text itself (data:) becomes a link to it: loading it as the thread is
 * viewed would tell its server what a prompt-injected URL carries (the page's CSP blocks
 * it too; this keeps it readable).
 */
export function Markdown({ text }: { text: string }) {
  const html = sanitizer().sanitize(marked.parse(text, { async: false, gfm: true, breaks: true }), { USE_PROFILES: { html: true } });
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

let configured: typeof DOMPurify | undefined;

function sanitizer(): typeof DOMPurify {
  if (configured) return configured;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    // A code block scrolls within itself when its lines are wide: a keyboard must reach it.
    if (node.tagName === 'PRE') node.setAttribute('tabindex', '0');
    if (node.tagName !== 'IMG') return;
    const source = node.getAttribute('src') ?? '';
    if (source.startsWith('data:image/')) return;
    const link = node.ownerDocument.createElement('a');
    link.setAttribute('href', source);
    link.setAttribute('rel', 'noopener noreferrer');
    link.setAttribute('target', '_blank');
    link.textContent = `image: ${node.getAttribute('alt') || source}`;
    node.replaceWith(link);
  });
  configured = DOMPurify;
  return configured;
}

/** Text of a message's content: a string, or the text blocks of a multimodal one. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((block) => (block && typeof block === 'object' && 'text' in block && typeof block.text === 'string' ? block.text : ''))
      .filter(Boolean)
      .join('\n');
  }
  return '';
}
