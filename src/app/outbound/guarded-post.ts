import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { isPrivateAddress } from '../../domain/outbound/address-policy.js';

/** The system resolver's shape (node:dns lookup with `all: true`), injectable for tests. */
export type Resolve = (hostname: string, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolve: Resolve = (hostname, callback) => dnsLookup(hostname, { all: true }, callback);

/**
 * A lookup for the connection itself that refuses a name resolving to a private or loopback
 * address: the address judged is the one connected to. Checking a name before the request
 * and letting the request resolve it again would let DNS answer differently the second
 * time (rebinding) and reach the server's own network.
 */
export function publicOnlyLookup(resolve: Resolve = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const usable = addresses.filter((entry) => options.family === undefined || options.family === 0 || entry.family === options.family);
      if (usable.length === 0) return callback(Object.assign(new Error(`"${hostname}" does not resolve`), { code: 'ENOTFOUND' }), '', 0);
      const refused = usable.find((entry) => isPrivateAddress(entry.address));
      if (refused) return callback(Object.assign(new Error(`"${hostname}" resolves to a private or loopback address (${refused.address})`), { code: 'OUTBOUND_ADDRESS_REFUSED' }), '', 0);
      if (options.all) return callback(null, usable);
      return callback(null, usable[0]!.address, usable[0]!.family);
    });
  };
}

/**
 * POST a body and answer the response's status (its body is discarded). Redirects are not
 * followed. `lookup` resolves the host for the connection (publicOnlyLookup unless private
 * addresses are allowed); an IP address in the URL is not looked up, and is checked by the
 * caller.
 */
export function postBody(url: string, init: { headers: Record<string, string>; body: string; timeoutMs: number; lookup?: LookupFunction }): Promise<number> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const signal = AbortSignal.timeout(init.timeoutMs);
  return new Promise((resolve, reject) => {
    const request = send(
      target,
      { method: 'POST', headers: { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) }, signal, ...(init.lookup ? { lookup: init.lookup } : {}) },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', (error) => reject(signal.aborted ? new Error(`no answer within ${init.timeoutMs} ms`) : error));
    request.end(init.body);
  });
}
