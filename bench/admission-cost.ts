// `node bench/admission-cost.ts`: what admitting a turn by memory costs on its own (issue 28), the way a W1
// turn pays it: the estimate from a cached history of 50 short messages, the reservation, its resize once the
// history is read, and its release, with the app's metrics. In rounds of 20,000 turns, one at a time.
import { Registry } from 'prom-client';
import { createActorMetrics } from '../src/actors/actor-metrics.ts';
import { Admission } from '../src/actors/admission.ts';
import { CachedHistory } from '../src/actors/cached-history.ts';
import type { SessionEntry } from '../src/actors/resident-actors.ts';
import { fileBytesOf, knownHistory, sendBytes, turnBytes } from '../src/actors/turn-estimate.ts';
import { ResidentBytes } from '../src/resident-bytes.ts';
import type { ContentBlock, MessageRecord, Store } from '../src/store/store.ts';

const metrics = createActorMetrics(new Registry());
const resident = new ResidentBytes({
  maxBytes: 2 * 1024 ** 3,
  onChange: (bytes, limit) => {
    metrics.residentBytes.set(bytes);
    metrics.residentLimit.set(limit);
  },
});
const admission = new Admission({ resident, tenantShare: 0.5, maxWaiting: 128, maxWaitMs: 30_000, metrics });
const history = new CachedHistory(resident);
const message = (i: number): MessageRecord => ({
  id: `msg_${i}`,
  session_id: 'ses_bench',
  role: i % 2 ? 'assistant' : 'user',
  content: [{ type: 'text', text: `Message number ${i}: a short line, as W1 sends.` }],
  metadata: null,
  created_at: new Date(0).toISOString(),
  turn_id: null,
  stop_reason: null,
  usage: null,
  tool_calls: null,
  author: null,
});
await history.recent(50, 4_000_000, async () => Array.from({ length: 50 }, (_, i) => message(i)));
const entry = { history, session: { messages_count: 50, tenant_id: 't1' } } as unknown as SessionEntry;
// Text only: the estimate looks no file up.
const store = {} as Store;
const bounds = { maxHistoryChars: 4_000_000, fileBudgetBytes: 32 * 1024 * 1024 };
const content: ContentBlock[] = [{ type: 'text', text: 'Hello! A short message, as W1 sends.' }];

for (let round = 1; round <= 5; round++) {
  const turns = 20_000;
  const started = performance.now();
  for (let i = 0; i < turns; i++) {
    const reservation = await admission.admit(
      't1',
      await sendBytes(store, bounds, 't1', knownHistory(entry), [content]),
    );
    reservation.resize(turnBytes(history.answeredChars, fileBytesOf([])));
    reservation.release();
  }
  const us = ((performance.now() - started) / turns) * 1000;
  process.stdout.write(`round ${round}: ${us.toFixed(2)} µs per turn\n`);
}
