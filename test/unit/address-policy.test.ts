import { describe, expect, it } from 'vitest';
import { isPrivateAddress } from '../../src/domain/outbound/address-policy.js';

describe('outbound address policy', () => {
  it('refuses loopback, private, link-local, carrier-grade NAT, multicast and unspecified addresses, IPv4 and IPv6', () => {
    for (const address of ['127.0.0.1', '10.0.0.8', '172.16.3.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '[::1]']) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
  });
  it('allows public addresses', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:93.184.216.34']) expect(isPrivateAddress(address), address).toBe(false);
  });
});
