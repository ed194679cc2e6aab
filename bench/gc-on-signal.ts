// Preloaded into the W3 Parley (`node --expose-gc --import ./bench/gc-on-signal.ts src/server.ts`):
// SIGWINCH (ignored by default, and not one of the signals Parley closes on) runs a full garbage collection,
// so that heap reads count live objects, not garbage awaiting a GC.
const gc = (globalThis as { gc?: () => void }).gc;
if (gc) process.on('SIGWINCH', () => gc());
