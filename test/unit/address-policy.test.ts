import { describe, expect, it } from 'vitest';
import { isPrivateAddress } from '../../src/domain/outbound/address-policy.js';

describe('outbound address policy', () => {
  it('refuses loopback, private, link-local, carrier-grade NAT, multicast and unspecified addresses, IPv4 and IPv6', () => {
    for (const address of ['127.0.0.1', '10.0.0.8', '172.16.3.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '[::1]']) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
  });
  it('refuses an IPv4 address written inside an IPv6 one, in every form URL parsing or DNS can give (mapped, compatible, NAT64, 6to4), and what is not an address', () => {
    for (const address of [
      '::ffff:7f00:1', // [::ffff:127.0.0.1] as the URL parser writes it
      '[::ffff:7f00:1]',
      '::ffff:a9fe:a9fe', // 169.254.169.254, the cloud metadata address
      '::FFFF:0A00:0001',
      '::127.0.0.1',
      '::7f00:1',
      '64:ff9b::7f00:1',
      '64:ff9b::10.0.0.1',
      '64:ff9b:1::a9fe:a9fe',
      '2002:7f00:1::',
      '2002:c0a8:101::1',
      '0:0:0:0:0:ffff:127.0.0.1',
      'fe80::1%eth0',
      'fec0::1',
      'ff02::1',
      '198.18.0.1',
      '192.0.0.8',
      '255.255.255.255',
      'not-an-address',
    ]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
  });
  it('allows public addresses', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:93.184.216.34', '::ffff:5db8:d822', '64:ff9b::808:808', '2002:808:808::1', '2001:4860:4860::8888']) expect(isPrivateAddress(address), address).toBe(false);
  });
});
