import { isIP } from 'node:net';

/** IPv4 ranges not on the public internet: [first octets as a 32-bit number, prefix length]. */
const PRIVATE_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 3], // multicast, reserved, broadcast
];

/** IPv6 ranges not on the public internet: [prefix as hex groups, prefix length]. */
const PRIVATE_V6: ReadonlyArray<readonly [string, number]> = [
  ['::', 128],
  ['::1', 128],
  ['100::', 64], // discard
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

/**
 * IPv6 forms that carry an IPv4 address, which is then what is reached: mapped
 * (::ffff:a.b.c.d, which URL parsing writes as ::ffff:7f00:1), compatible (::a.b.c.d),
 * NAT64 (64:ff9b::/96, and the local-use 64:ff9b:1::/48), 6to4 (2002:AABB:CCDD::).
 * Returns the IPv4 address as a number, or undefined.
 */
function embeddedV4(bytes: Uint8Array): number | undefined {
  const word = (offset: number) => ((bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!) >>> 0;
  const zeros = (from: number, to: number) => bytes.subarray(from, to).every((byte) => byte === 0);
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return word(12);
  if (zeros(0, 12) && word(12) > 1) return word(12); // ::a.b.c.d, but not :: or ::1
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && (zeros(4, 12) || (bytes[4] === 0x00 && bytes[5] === 0x01))) return word(12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return word(2);
  return undefined;
}

function v4Number(address: string): number {
  return address.split('.').reduce((value, part) => ((value << 8) | Number(part)) >>> 0, 0);
}

function v4InRange(value: number, [base, bits]: readonly [string, number]): boolean {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (value & mask) >>> 0 === (v4Number(base) & mask) >>> 0;
}

/** An IPv6 address (any textual form isIP accepts, dotted tail included) as its 16 bytes. */
function v6Bytes(address: string): Uint8Array {
  let text = address.split('%')[0]!; // a zone index names an interface, not an address
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const value = v4Number(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? headGroups : [...headGroups, ...new Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  const bytes = new Uint8Array(16);
  groups.forEach((group, index) => {
    const value = Number.parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  });
  return bytes;
}

function v6InRange(bytes: Uint8Array, [base, bits]: readonly [string, number]): boolean {
  const prefix = v6Bytes(base);
  for (let bit = 0; bit < bits; bit += 8) {
    const mask = bits - bit >= 8 ? 0xff : (0xff << (8 - (bits - bit))) & 0xff;
    if ((bytes[bit / 8]! & mask) !== (prefix[bit / 8]! & mask)) return false;
  }
  return true;
}

/**
 * Whether an IP address is private, loopback, link-local or otherwise not on the public
 * internet: an outbound webhook must not become a way to reach the server's own network.
 * Every textual form counts (an IPv4 address inside an IPv6 one is judged as IPv4);
 * anything that is not an IP address is refused too.
 */
export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '').toLowerCase();
  const version = isIP(ip.split('%')[0]!);
  if (version === 4) {
    const value = v4Number(ip);
    return PRIVATE_V4.some((range) => v4InRange(value, range));
  }
  if (version !== 6) return true;
  const bytes = v6Bytes(ip);
  const v4 = embeddedV4(bytes);
  if (v4 !== undefined) return PRIVATE_V4.some((range) => v4InRange(v4, range));
  return PRIVATE_V6.some((range) => v6InRange(bytes, range));
}

export const OUTBOUND_EVENT_TYPES = ['run.completed', 'approval.requested', 'approval.expired'] as const;
export type OutboundEventType = (typeof OUTBOUND_EVENT_TYPES)[number];
