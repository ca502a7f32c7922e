import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openNodeSqlite } from '../src/adapters/sql/node-sqlite.js';
import { vigilHarness } from './turn.bench.js';
const cleanups: (() => Promise<void>)[] = [];
const options: any = { quick: false, full: false, postgresUrl: undefined, onCleanup: (c: any) => void cleanups.push(c), progress: () => undefined };
const before = new Set(readdirSync(tmpdir()));
const h = await vigilHarness(options, 'sqlite');
await h.seed(100);
for (let i = 0; i < 3; i++) await h.turn(i);
const dir = readdirSync(tmpdir()).find((name) => !before.has(name) && name.startsWith('vigil-bench-turn-vigil'))!;
const db = openNodeSqlite(join(tmpdir(), dir, 'vigil.sqlite'));
const cps = db.prepare(`SELECT checkpoint_id, length(checkpoint) c, length(metadata) m, CAST(metadata AS TEXT) mt, CAST(checkpoint AS TEXT) ct FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 4`).all() as any[];
for (const row of cps) console.log('checkpoint', row.c, row.m, '\n  meta', row.mt, '\n  cp', row.ct.slice(0, 1500));
const writes = db.prepare(`SELECT checkpoint_id, task_id, channel, idx, length(value) v, CAST(value AS TEXT) vt FROM writes ORDER BY checkpoint_id DESC LIMIT 12`).all() as any[];
for (const row of writes) console.log('write', row.checkpoint_id.slice(-6), row.channel, row.idx, row.v, row.vt.slice(0, 200));
for (const t of db.prepare(`SELECT name FROM sqlite_master WHERE type='table'`).all() as any[]) {
  const n = (db.prepare(`SELECT count(*) n FROM "${t.name}"`).get() as any).n;
  console.log('table', t.name, n);
}
const msg = db.prepare(`SELECT * FROM thread_messages ORDER BY rowid DESC LIMIT 1`).get();
console.log('thread_message', JSON.stringify(msg).length, JSON.stringify(msg).slice(0, 800));
db.close();
for (const c of cleanups.reverse()) await c();
