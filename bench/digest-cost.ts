/**
 * Micro-benchmark: the engine's digest (digest64) against node:crypto's one-shot sha1, which the engine used
 * before, side by side in one process, on the texts the progress tracker hashes per observed call (a call's
 * fingerprint with its result's digest, a tool result). The plain-JavaScript sha1 kept for runs journalled
 * before digest64 is measured too.
 *
 *   node --import ./test/support/typescript-register.mjs bench/digest-cost.ts [iterations]
 */
import { hash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { digest64, legacySha1 } from '../src/engine/progress/digest.js';

const iterations = Number(process.argv[2] ?? 200_000);
const texts = {
  'fingerprint (60 B)': 'get_order_status:{"order_id":"O-101"}\n9f86d081884c7d659a2feaa0',
  'tool result (400 B)': JSON.stringify({
    order_id: 'O-101',
    status: 'shipped',
    items: Array.from({ length: 6 }, (_, index) => ({ sku: `SKU-${index}`, quantity: index + 1, price: 9.99 + index })),
  }).padEnd(400, ' '),
  'tool result (8 KB)': 'x'.repeat(8_192),
};
const candidates: Record<string, (text: string) => string> = {
  digest64,
  "node:crypto hash('sha1')": (text) => hash('sha1', text, 'hex'),
  'legacySha1 (plain JS)': legacySha1,
};

let sink = 0;
function nsPerCall(digest: (text: string) => string, text: string, count: number): number {
  const started = performance.now();
  for (let index = 0; index < count; index++) sink += digest(index % 2 === 0 ? text : `${text} `).length;
  return ((performance.now() - started) * 1e6) / count;
}

for (const [label, text] of Object.entries(texts)) {
  const count = text.length > 1_000 ? Math.max(1, Math.floor(iterations / 20)) : iterations;
  const best: Record<string, number> = {};
  // Interleaved rounds, best of five: each candidate sees the same machine state.
  for (let round = 0; round < 5; round++) {
    for (const [name, digest] of Object.entries(candidates))
      best[name] = Math.min(best[name] ?? Infinity, nsPerCall(digest, text, count));
  }
  console.log(
    `${label}: ${Object.entries(best)
      .map(([name, ns]) => `${name} ${ns.toFixed(0)} ns`)
      .join(' | ')}`,
  );
}
if (sink === 0) console.log('');
