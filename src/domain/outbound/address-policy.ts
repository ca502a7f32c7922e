import { isIP } from 'node:net';

/**
 * Whether an IP address is private, loopback, link-local or otherwise not on the public
 * internet: an outbound webhook must not become a way to reach the server's own network.
 */
export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  if (mapped) return isPrivateAddress(mapped[1]!);
  if (isIP(ip) === 4) {
    const [a = 0, b = 0] = ip.split('.').map(Number);
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || a >= 224;
  }
  if (isIP(ip) === 6) return ip === '::' || ip === '::1' || ip.startsWith('fc') || ip.startsWith('fd') || ip.startsWith('fe80') || ip.startsWith('ff');
  return false;
}

export const OUTBOUND_EVENT_TYPES = ['run.completed', 'approval.requested', 'approval.expired'] as const;
export type OutboundEventType = (typeof OUTBOUND_EVENT_TYPES)[number];
