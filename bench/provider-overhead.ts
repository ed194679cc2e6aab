// What the AI SDK adds to a model call against the hand-written Chat Completions client it replaces: the
// same streamed reply from a local fake server (support/fake-model-server.ts), called one at a time, the
// clients interleaved in rounds so that the machine's noise falls on both. Reports wall time and this
// process's CPU per call. `node bench/provider-overhead.ts [calls per round] [rounds]`; writes nothing.
import { performance } from 'node:perf_hooks';
import { remoteProvider } from '../src/agents/ai-sdk-provider.ts';
import type { ModelRequest, Provider } from '../src/agents/provider.ts';
import { startFakeModelServer } from '../support/fake-model-server.ts';
import { OpenAiProvider } from './hand-written-openai.ts';

const calls = Number(process.argv[2] ?? 300);
const rounds = Number(process.argv[3] ?? 5);
const fake = await startFakeModelServer();
fake.fallback = { kind: 'reply', text: 'A reply of a few words, as a model would stream it back to us.' };

const request: ModelRequest = {
  model: 'fake-model',
  system: 'You are a friendly demo agent. Answer briefly.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello, how are you today?' }] }],
  signal: new AbortController().signal,
  onDelta: () => {},
};

const clients: [string, Provider][] = [
  ['hand-written (undici)', new OpenAiProvider({ baseUrl: fake.baseUrl, apiKey: 'k' })],
  ['AI SDK openai', await remoteProvider('openai', { baseUrl: fake.baseUrl, apiKey: 'k', settings: {} })],
  [
    'AI SDK openai-compatible',
    await remoteProvider('openai-compatible', { baseUrl: fake.baseUrl, apiKey: 'k', settings: {} }),
  ],
];
const totals = new Map(clients.map(([name]) => [name, { wallMs: 0, cpuUs: 0, n: 0 }]));

for (const [, client] of clients) for (let i = 0; i < 20; i++) await client.generate(request); // warm-up
for (let round = 0; round < rounds; round++) {
  for (const [name, client] of clients) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < calls; i++) await client.generate(request);
    const total = totals.get(name);
    if (!total) continue;
    total.wallMs += performance.now() - started;
    const used = process.cpuUsage(cpu);
    total.cpuUs += used.user + used.system;
    total.n += calls;
  }
}
console.log(`${calls} calls × ${rounds} rounds per client, one at a time, Node ${process.version}`);
console.log('| client | ms per call | CPU ms per call (this process) |');
console.log('|---|--:|--:|');
for (const [name, t] of totals) {
  console.log(`| ${name} | ${(t.wallMs / t.n).toFixed(3)} | ${(t.cpuUs / 1000 / t.n).toFixed(3)} |`);
}
await fake.close();
