import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postBody, publicOnlyLookup, type Resolve } from '../../src/app/outbound/guarded-post.js';

/** A resolver that answers fixed addresses for a name, as DNS would (a rebinding one answers a private one). */
const answering = (address: string, family = 4): Resolve => (_hostname, callback) => callback(null, [{ address, family }]);

describe('outbound webhook delivery: the address connected to is the one judged', () => {
  let receiver: Server;
  let port = 0;
  const received: string[] = [];
  beforeAll(async () => {
    receiver = createServer((request, response) => {
      received.push(request.url ?? '');
      request.resume();
      request.on('end', () => response.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it('a name that resolves to a loopback address when the request connects is refused, and nothing reaches that address', async () => {
    // What a rebinding name does: public when it was checked, loopback when connected to. The connection resolves with this lookup.
    const request = postBody(`http://rebind.example:${port}/hook`, { headers: {}, body: '{}', timeoutMs: 5_000, lookup: publicOnlyLookup(answering('127.0.0.1')) });
    await expect(request).rejects.toMatchObject({ code: 'OUTBOUND_ADDRESS_REFUSED' });
    for (const address of ['::ffff:7f00:1', '169.254.169.254', '10.0.0.1']) {
      await expect(postBody(`http://rebind.example:${port}/hook`, { headers: {}, body: '{}', timeoutMs: 5_000, lookup: publicOnlyLookup(answering(address, address.includes(':') ? 6 : 4)) })).rejects.toMatchObject({ code: 'OUTBOUND_ADDRESS_REFUSED' });
    }
    expect(received).toEqual([]);
  });

  it('the lookup given is the one the connection uses: without the guard the same name reaches the receiver', async () => {
    const plain: Parameters<typeof postBody>[1]['lookup'] = (_hostname, options, callback) => (options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4));
    expect(await postBody(`http://rebind.example:${port}/plain`, { headers: { 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs: 5_000, lookup: plain })).toBe(204);
    expect(received).toEqual(['/plain']);
  });

  it('a public answer passes the guard', () => {
    return new Promise<void>((resolve, reject) => {
      publicOnlyLookup(answering('93.184.216.34'))('example.com', { all: true }, (error, addresses) => {
        try {
          expect(error).toBeNull();
          expect(addresses).toEqual([{ address: '93.184.216.34', family: 4 }]);
          resolve();
        } catch (failure) {
          reject(failure);
        }
      });
    });
  });
});
