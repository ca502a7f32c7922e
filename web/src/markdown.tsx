import DOMPurify from 'dompurify';
import { marked } from 'marked';

/**
 * Model and webhook text rendered as markdown, then sanitised: a <script>, an
 * <img onerror> or a javascript: link in the text comes out inert.
 */
export function Markdown({ text }: { text: string }) {
  const html = DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true, breaks: true }), { USE_PROFILES: { html: true } });
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
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
