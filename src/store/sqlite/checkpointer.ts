// The WAL's checkpoints, off the event loop: a worker thread with a connection of its own copies the pages
// committed to the WAL into the database file (and syncs it) while the main thread goes on committing. Left to
// the main connection, a checkpoint runs inside the COMMIT that crosses SQLite's threshold: that commit, and
// every request waiting on the event loop behind it, waits for a thousand pages to be written and synced.
import { Worker } from 'node:worker_threads';

/**
 * The worker's code: a PASSIVE checkpoint every `intervalMs` (it never waits for a lock, nor holds one a writer
 * needs), its outcome posted back. Plain JavaScript, so that it needs no loader.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.file, { timeout: 0 });
db.exec('PRAGMA synchronous = FULL');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let last = 0;
const timer = setInterval(() => {
  try {
    // How far the WAL is copied: told when it moved (a reset WAL starts again from 0).
    const { checkpointed } = checkpoint.get();
    if (checkpointed !== last && checkpointed > 0) parentPort.postMessage({ checkpointed });
    last = checkpointed;
  } catch (err) {
    parentPort.postMessage({ error: String(err) });
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface CheckpointerOptions {
  /** How often the worker checkpoints what was committed since. */
  intervalMs: number;
  /** A checkpoint that failed (the main connection's own checkpoints still bound the WAL). */
  onError?(message: string): void;
}

export class Checkpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #checkpoints = 0;

  constructor(file: string, options: CheckpointerOptions) {
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file, intervalMs: options.intervalMs },
    });
    this.#worker.on('message', (m: { checkpointed?: number; error?: string }) => {
      if (m.error !== undefined) options.onError?.(m.error);
      else this.#checkpoints++;
    });
    this.#exited = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
    this.#worker.on('error', (err) => options.onError?.(String(err)));
    // It must not keep a process alive that has nothing else to do (a store never closed: a failed start).
    // After the listeners: adding a 'message' listener references the worker's port again.
    this.#worker.unref();
  }

  /** Checkpoints of the worker that copied anything so far. */
  get checkpoints(): number {
    return this.#checkpoints;
  }

  /** Stops the worker once its checkpoint in progress, if any, is over; its connection is closed. */
  async stop(): Promise<void> {
    // Referenced again: a process with nothing else left to do (the CLI) must wait for the thread to end.
    this.#worker.ref();
    this.#worker.postMessage('stop');
    await this.#exited;
  }
}
