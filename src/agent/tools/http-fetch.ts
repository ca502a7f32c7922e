import type { FetchToolSettings } from '../../domain/planner/planner-settings.js';

export interface FetchResult {
  url: string;
  status: number;
  contentType: string;
  body: string;
  /** The body was cut at the size cap. */
  truncated: boolean;
}

const MAX_REDIRECTS = 3;

/** Whether a URL's host is on the allow-list: `host`, `host:port`, or `*.domain` for subdomains. */
export function isHostAllowed(url: URL, allowedHosts: readonly string[]): boolean {
  const hostname = url.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allowedHosts.some((entry) => {
    const [pattern = '', entryPort] = entry.toLowerCase().split(/:(?=\d+$)/);
    if (entryPort !== undefined && entryPort !== port) return false;
    if (pattern.startsWith('*.')) return hostname.endsWith(pattern.slice(1)) && hostname.length > pattern.length - 1;
    return hostname === pattern;
  });
}

/**
 * GET a URL for the planner's http_fetch tool: only hosts on the agent's allow-list (also
 * for every redirect), within a timeout, reading at most `maxBytes` of the body.
 */
export async function fetchWithinLimits(rawUrl: string, settings: FetchToolSettings, signal?: AbortSignal): Promise<FetchResult> {
  let url = parseHttpUrl(rawUrl);
  const timeout = AbortSignal.timeout(settings.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  for (let redirects = 0; ; redirects++) {
    if (!isHostAllowed(url, settings.allowedHosts)) throw new Error(`host "${url.host}" is not on this agent's fetch allow-list`);
    let response: Response;
    try {
      response = await fetch(url, { redirect: 'manual', signal: combined, headers: { accept: 'text/*, application/json;q=0.9, */*;q=0.1' } });
    } catch (error) {
      if (timeout.aborted) throw new Error(`fetching ${url.href} timed out after ${settings.timeoutMs} ms`);
      throw error;
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel().catch(() => undefined);
      if (redirects >= MAX_REDIRECTS) throw new Error(`too many redirects fetching ${rawUrl}`);
      url = parseHttpUrl(new URL(location, url).href);
      continue;
    }
    const contentType = response.headers.get('content-type') ?? '';
    const { bytes, truncated } = await readCapped(response, settings.maxBytes);
    const textual = contentType === '' || /^(text\/|application\/(json|xml|[\w.+-]*\+(json|xml))|application\/javascript)/i.test(contentType);
    const body = textual ? new TextDecoder('utf-8', { fatal: false }).decode(bytes) : `[${contentType} content, ${bytes.byteLength} bytes not shown]`;
    return { url: url.href, status: response.status, contentType, body, truncated };
  }
}

function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`not a valid URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`only http and https URLs can be fetched, not ${url.protocol}`);
  if (url.username || url.password) throw new Error('URLs with credentials are not fetched');
  return url;
}

async function readCapped(response: Response, maxBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!response.body) return { bytes: new Uint8Array(), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - size));
      size = maxBytes;
      truncated = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { bytes, truncated };
}
