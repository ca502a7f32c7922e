import { VigilError } from '../../domain/errors.js';

/**
 * The task-text template of a webhook: plain text with `{{ name }}` placeholders, e.g.
 * `New event {{payload.kind}} from {{payload.repo}}`.
 *
 * Deliberately not a template engine: no expressions, filters, loops, conditionals or
 * code; a placeholder is a name from a fixed whitelist, replaced by a bounded value.
 *   payload.<path>  a field of the delivery's mapped payload (hook-payload.ts), already
 *                   bounded and redacted; missing → empty text
 *   hook.id, hook.name, delivery.id
 * The template is parsed once, at hook creation, and refused with VALIDATION_FAILED when
 * it has an unknown name or a stray `{{`/`}}`, so a typo shows up when the hook is made,
 * not as odd task text later. Rendering is one pass over the parsed parts: a value that
 * itself contains `{{…}}` is text, never expanded again.
 */

export const TEMPLATE_MAX_CHARS = 2000;
/** Each substituted value is cut to this many characters. */
export const TEMPLATE_VALUE_MAX_CHARS = 500;
/** The rendered task text is cut to this many characters. */
export const TASK_TEXT_MAX_CHARS = 4000;

export const PAYLOAD_PATH = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
export const PAYLOAD_PATH_MAX_CHARS = 64;
const FIXED_NAMES = new Set(['hook.id', 'hook.name', 'delivery.id']);

export type TemplatePart = { kind: 'text'; text: string } | { kind: 'payload'; path: string } | { kind: 'fixed'; name: string };

export interface TemplateValues {
  payload: Readonly<Record<string, unknown>>;
  hook: { id: string; name: string };
  delivery: { id: string };
}

/** Parse a template; VALIDATION_FAILED names what is wrong. */
export function parseTemplate(template: string, allowedPayloadPaths?: readonly string[] | null): TemplatePart[] {
  if (template.trim().length === 0) fail('the task template is empty');
  if (template.length > TEMPLATE_MAX_CHARS) fail(`the task template is longer than ${TEMPLATE_MAX_CHARS} characters`);
  const parts: TemplatePart[] = [];
  let rest = template;
  while (rest.length > 0) {
    const open = rest.indexOf('{{');
    const strayClose = rest.indexOf('}}');
    if (open === -1) {
      if (strayClose !== -1) fail('the task template has "}}" without "{{"');
      parts.push({ kind: 'text', text: rest });
      break;
    }
    if (strayClose !== -1 && strayClose < open) fail('the task template has "}}" without "{{"');
    if (open > 0) parts.push({ kind: 'text', text: rest.slice(0, open) });
    const close = rest.indexOf('}}', open + 2);
    if (close === -1) fail('the task template has "{{" without "}}"');
    const name = rest.slice(open + 2, close).trim();
    parts.push(placeholder(name, allowedPayloadPaths));
    rest = rest.slice(close + 2);
  }
  return parts;
}

function placeholder(name: string, allowedPayloadPaths: readonly string[] | null | undefined): TemplatePart {
  if (FIXED_NAMES.has(name)) return { kind: 'fixed', name };
  if (name.startsWith('payload.')) {
    const path = name.slice('payload.'.length);
    if (!PAYLOAD_PATH.test(path) || path.length > PAYLOAD_PATH_MAX_CHARS) fail(`the template placeholder {{${shown(name)}}} is not a valid payload path`);
    if (allowedPayloadPaths && !allowedPayloadPaths.includes(path)) fail(`the template uses payload.${path}, which is not in payloadFields`);
    return { kind: 'payload', path };
  }
  fail(`unknown template placeholder {{${shown(name)}}}: use payload.<path>, hook.id, hook.name or delivery.id`);
}

/** The task text of one delivery. */
export function renderTemplate(parts: readonly TemplatePart[], values: TemplateValues): string {
  let text = '';
  for (const part of parts) {
    if (part.kind === 'text') text += part.text;
    else text += bounded(part.kind === 'payload' ? values.payload[part.path] : fixedValue(part.name, values));
  }
  return cut(text.replace(/\r\n?/g, '\n'), TASK_TEXT_MAX_CHARS).trim();
}

function fixedValue(name: string, values: TemplateValues): string {
  if (name === 'hook.id') return values.hook.id;
  if (name === 'hook.name') return values.hook.name;
  return values.delivery.id;
}

function bounded(value: unknown): string {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? '';
  // Control characters other than newline and tab say nothing to a model; drop them.
  // eslint-disable-next-line no-control-regex
  return cut(text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ''), TEMPLATE_VALUE_MAX_CHARS);
}

/** Cut to `max` UTF-16 units without splitting a surrogate pair, marking the cut. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

function shown(name: string): string {
  return name.length > 40 ? `${name.slice(0, 40)}…` : name;
}

function fail(message: string): never {
  throw new VigilError('VALIDATION_FAILED', message);
}
