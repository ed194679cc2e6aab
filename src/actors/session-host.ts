// The session actor host: one XState actor per session this process owns. It activates a session from the
// store on first use, hands callers' operations to the actor (which runs them one at a time), commits every
// change with the shard's fencing epoch before the actor sees it, and passivates idle actors under an LRU cap.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AnyActorRef, createActor } from 'xstate';
import type { Coordinator, ShardHandler } from '../cluster/coordinator.ts';
import { AppError, shardMoving } from '../errors.ts';
import {
  type OperateInput,
  type Operation,
  persistedSnapshot,
  type SessionActor,
  type SessionEvent,
  type SessionMachine,
  type SessionStatus,
  sessionMachine,
  statusOf,
} from '../machines/session.ts';
import {
  type MessageRecord,
  type SessionRecord,
  type SessionWrite,
  type SessionWriteResult,
  StaleEpochError,
  type Store,
} from '../store/store.ts';
import type { ActorMetrics } from './actor-metrics.ts';

export interface SessionEntry {
  /** The session row as activated; `messages_count` follows the commits of this process. */
  readonly session: SessionRecord;
  /**
   * The session's latest messages, oldest first, once a turn has read them: every commit appends what it
   * stored, so a turn does not read its history back from the store. Gone with the actor.
   */
  history: MessageRecord[] | null;
  readonly actor: SessionActor;
  lastUsed: number;
}

/** A session write without what the host adds: the fence and the snapshot. */
export type SessionChange = Omit<SessionWrite, 'session_id' | 'fence' | 'patch'> & {
  patch?: Omit<SessionWrite['patch'], 'snapshot'>;
};

/** Watches one turn as it happens, for a streamed reply. Called only after what it reports is committed. */
export interface TurnObserver {
  /** The turn's first message is stored; `replyId` is the id the agent's reply will have. */
  started(turnId: string, message: MessageRecord, replyId: string | null): void;
  /** A piece of the reply's text, as the model writes it. */
  delta(text: string): void;
}

export interface OperationContext {
  readonly entry: SessionEntry;
  /** The caller's observer, when it asked for a streamed turn. */
  readonly observer: TurnObserver | undefined;
  /** Commits `change` together with the snapshot the actor will have after `event`, then sends `event`. */
  commit(change: SessionChange, event?: SessionEvent): Promise<SessionWriteResult>;
  /** Aborted when the host shuts down. */
  readonly signal: AbortSignal;
}

/** Runs one operation (the I/O of a send, a terminate, an expiry…) and returns the caller's answer. */
export type OperationRunner = (context: OperationContext, op: Operation) => Promise<unknown>;

export interface SessionHostOptions {
  store: Store;
  coordinator: Coordinator;
  run: OperationRunner;
  metrics: ActorMetrics;
  /** Most actors kept in memory (DESIGN.md §10: 50,000). */
  maxResident: number;
  /** Idle time after which an actor is passivated (10 min). */
  idleMs: number;
  /** How often to passivate idle actors and expire due sessions. */
  sweepMs: number;
  maxWaiting?: number;
  log?: { warn(obj: unknown, msg?: string): void; error(obj: unknown, msg?: string): void };
}

interface Waiter {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export const statusError = (status: SessionStatus, sessionId: string) =>
  new AppError(status === 'closed' ? 'session_closed' : 'session_expired', undefined, {
    context: { session_id: sessionId },
  });

const shuttingDown = () =>
  new AppError('service_unavailable', 'The service is shutting down.', { headers: { 'retry-after': '1' } });

export class SessionHost implements ShardHandler {
  readonly #o: SessionHostOptions;
  readonly #machine: SessionMachine;
  readonly #entries = new Map<string, SessionEntry>();
  readonly #activating = new Map<string, Promise<SessionEntry | null>>();
  readonly #waiters = new Map<string, Waiter[]>();
  readonly #observers = new Map<string, TurnObserver>();
  readonly #running = new Set<Promise<unknown>>();
  readonly #shutdown = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #sweeping = false;
  #closing = false;

  constructor(options: SessionHostOptions) {
    this.#o = options;
    this.#machine = this.#provideMachine();
    // Every running model call listens on it: as many listeners as turns in flight, not a leak.
    setMaxListeners(0, this.#shutdown.signal);
  }

  start(): void {
    this.#timer = setInterval(() => void this.sweep(), this.#o.sweepMs);
    this.#timer.unref();
  }

  /** Stops sweeping, refuses waiting operations, lets running ones finish for up to `graceMs`, then aborts them and drops every actor. */
  async close(graceMs = 10_000): Promise<void> {
    clearInterval(this.#timer);
    // Waiting operations are refused from now on; running ones may finish within the grace time.
    this.#closing = true;
    const settled = Promise.allSettled([...this.#running]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.#shutdown.abort(new Error('shutting down'));
    await settled;
    for (const id of [...this.#entries.keys()]) this.#drop(id, 'shutdown', shuttingDown);
  }

  get residentCount(): number {
    return this.#entries.size;
  }

  /** The session's actor entry, activating it when needed; null when there is no such session. */
  async entry(sessionId: string): Promise<SessionEntry | null> {
    const resident = this.#entries.get(sessionId);
    if (resident) {
      resident.lastUsed = Date.now();
      // Re-inserting keeps the Map in least-recently-used order.
      this.#entries.delete(sessionId);
      this.#entries.set(sessionId, resident);
      return resident;
    }
    let pending = this.#activating.get(sessionId);
    if (!pending) {
      pending = this.#activate(sessionId).finally(() => this.#activating.delete(sessionId));
      this.#activating.set(sessionId, pending);
    }
    return pending;
  }

  /** The session's status as its actor holds it. */
  status(entry: SessionEntry): SessionStatus {
    return statusOf(entry.actor.getSnapshot());
  }

  /** Hands `op` to the session's actor and waits for its answer; `observer` watches it run. */
  async submit(given: SessionEntry, op: Operation, observer?: TurnObserver): Promise<unknown> {
    // The actor may have been dropped (LRU, idle, lost shard) since the caller looked it up.
    const entry = this.#entries.get(given.session.id) === given ? given : await this.entry(given.session.id);
    if (!entry)
      throw new AppError('session_not_found', undefined, { context: { session_id: given.session.id } });
    const status = this.status(entry);
    if (status !== 'active') throw statusError(status, entry.session.id);
    if (!this.#o.coordinator.serves(entry.session.shard)) throw shardMoving({ session_id: entry.session.id });
    const answer = new Promise((resolve, reject) => this.#wait(op.id, { resolve, reject }));
    if (observer) this.#observers.set(op.id, observer);
    entry.actor.send({ type: 'SUBMIT', op, at: Date.now() });
    return answer;
  }

  /** Expires the session if its time has passed (the lazy check behind every read). */
  async expireIfDue(sessionId: string): Promise<void> {
    const entry = await this.entry(sessionId);
    if (!entry || this.status(entry) !== 'active') return;
    if (Date.now() < entry.actor.getSnapshot().context.expiresAt) return;
    await this.submit(entry, { id: `expire_${sessionId}`, kind: 'expire' }).catch((err) => {
      if (!(err instanceof AppError && err.code === 'session_expired')) throw err;
    });
  }

  /** Passivates idle actors and expires due sessions; runs every `sweepMs`. */
  async sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      const idleSince = Date.now() - this.#o.idleMs;
      for (const [id, entry] of this.#entries) {
        if (entry.lastUsed < idleSince && this.#isIdle(entry)) this.#drop(id, 'idle');
      }
      const now = new Date().toISOString();
      const shards = this.#o.coordinator.servedShards();
      for (const id of await this.#o.store.sessionsDueForExpiry(now, 500, shards)) {
        await this.expireIfDue(id).catch((err) =>
          this.#o.log?.warn({ err, session_id: id }, 'expiry failed'),
        );
      }
      await this.#o.store.deleteExpiredIdempotencyRecords(now);
    } catch (err) {
      this.#o.log?.warn({ err }, 'session sweep failed; the next one retries');
    } finally {
      this.#sweeping = false;
    }
  }

  /** Drops an actor from memory; what it holds is already committed. */
  passivate(sessionId: string): boolean {
    const entry = this.#entries.get(sessionId);
    if (!entry || !this.#isIdle(entry)) return false;
    this.#drop(sessionId, 'manual');
    return true;
  }

  /**
   * Hands shards over: their running and queued operations finish (for up to `graceMs`; the coordinator
   * already refuses new ones), then their actors are dropped.
   */
  async release(shards: readonly number[], graceMs = 10_000): Promise<void> {
    const set = new Set(shards);
    const inShards = () => [...this.#entries].filter(([, entry]) => set.has(entry.session.shard));
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && inShards().some(([, entry]) => !this.#isIdle(entry))) await sleep(20);
    for (const [id] of inShards()) this.#drop(id, 'handover');
  }

  /** The shards are lost without notice: their actors go at once (their writes would be refused). */
  drop(shards: readonly number[]): void {
    const set = new Set(shards);
    for (const [id, entry] of this.#entries) {
      if (set.has(entry.session.shard)) this.#drop(id, 'lost');
    }
  }

  #isIdle(entry: SessionEntry): boolean {
    const { context } = entry.actor.getSnapshot();
    return context.current === null && context.queue.length === 0;
  }

  /** Drops an actor from memory; callers still waiting in its queue get `error`. */
  #drop(sessionId: string, reason: string, error?: () => AppError): void {
    const entry = this.#entries.get(sessionId);
    if (!entry) return;
    this.#entries.delete(sessionId);
    const fail = error ?? (() => shardMoving({ session_id: sessionId }));
    for (const op of entry.actor.getSnapshot().context.queue) this.#settle(op.id, { error: fail() });
    entry.actor.stop();
    this.#o.metrics.passivations.inc({ reason });
    this.#o.metrics.resident.set(this.#entries.size);
  }

  async #activate(sessionId: string): Promise<SessionEntry | null> {
    const loaded = await this.#o.store.loadSession(sessionId);
    if (!loaded) return null;
    const { session } = loaded;
    if (!this.#o.coordinator.serves(session.shard)) throw shardMoving({ session_id: sessionId });
    const shell = { session, lastUsed: Date.now(), history: null } as {
      -readonly [K in keyof SessionEntry]: SessionEntry[K];
    };
    const snapshot = loaded.snapshot ? JSON.parse(loaded.snapshot) : undefined;
    shell.actor = createActor(this.#machine, {
      ...(snapshot ? { snapshot } : {}),
      input: {
        sessionId,
        expiresAt: Date.parse(session.expires_at ?? '') || Date.now(),
        maxWaiting: this.#o.maxWaiting,
      },
    });
    // In the map before it starts: its operations find their entry by session id.
    this.#entries.set(sessionId, shell);
    shell.actor.start();
    this.#o.metrics.activations.inc();
    this.#evictOverCap(sessionId);
    this.#o.metrics.resident.set(this.#entries.size);
    return shell;
  }

  /** Drops the least recently used idle actors over the cap, never `keep` (just activated for a caller). */
  #evictOverCap(keep: string): void {
    if (this.#entries.size <= this.#o.maxResident) return;
    for (const [id, entry] of this.#entries) {
      if (this.#entries.size <= this.#o.maxResident) break;
      if (id !== keep && this.#isIdle(entry)) this.#drop(id, 'lru');
    }
  }

  /**
   * The machine with this host's side effects: running operations and answering the callers. One for all
   * sessions (providing is costly); an operation finds its session's entry by id.
   */
  #provideMachine(): SessionMachine {
    return sessionMachine.provide({
      actions: {
        // Run once the transition that started it is over, so the operation sees the actor's new snapshot.
        operate: ({ self }, input) => queueMicrotask(() => void this.#operate(self, input)),
        reject: ({ context }, { op, code }) =>
          this.#settle(op.id, {
            error: new AppError(code, undefined, {
              context: { session_id: context.sessionId },
              ...(code === 'session_busy' ? { headers: { 'retry-after': '1' } } : {}),
            }),
          }),
        join: (_, { op, target }) => {
          // The joiner gets the first attempt's answer only, not its events.
          const waiters = this.#waiters.get(op.id) ?? [];
          this.#waiters.delete(op.id);
          this.#observers.delete(op.id);
          for (const w of waiters) this.#wait(target, w);
        },
        rejectAll: ({ context }, { ops, code }) => {
          for (const op of ops)
            this.#settle(op.id, {
              error: statusError(code === 'session_closed' ? 'closed' : 'expired', context.sessionId),
            });
        },
      },
    });
  }

  /** Runs one operation, answers its callers, then tells the actor, which starts the next one. */
  async #operate(actor: AnyActorRef, { sessionId, op }: OperateInput): Promise<void> {
    // The actor that started it may have been dropped (and the session activated anew) in the meantime.
    const resident = this.#entries.get(sessionId);
    const entry = resident?.actor === actor ? resident : undefined;
    const work = this.#closing
      ? Promise.reject(shuttingDown())
      : !entry
        ? Promise.reject(shardMoving({ session_id: sessionId }))
        : this.#o.run(this.#operationContext(entry, this.#observers.get(op.id)), op);
    this.#running.add(work);
    try {
      this.#settle(op.id, { value: await work });
    } catch (err) {
      this.#settle(op.id, { error: err });
    } finally {
      this.#running.delete(work);
    }
    // A closed or expired session's actor is done, and a dropped one stopped: neither runs anything more.
    if (actor.getSnapshot().status === 'active') actor.send({ type: 'DONE', opId: op.id });
  }

  #operationContext(entry: SessionEntry, observer: TurnObserver | undefined): OperationContext {
    return {
      entry,
      observer,
      signal: this.#shutdown.signal,
      commit: async (change, event) => {
        const { shard } = entry.session;
        const fence = this.#o.coordinator.fence(shard);
        if (!fence) throw shardMoving({ session_id: entry.session.id });
        const snapshot = persistedSnapshot(this.#machine, entry.actor.getSnapshot(), event);
        let result: SessionWriteResult;
        try {
          result = await this.#o.store.commitSession({
            ...change,
            session_id: entry.session.id,
            fence,
            patch: { ...change.patch, snapshot },
          });
        } catch (err) {
          if (!(err instanceof StaleEpochError)) throw err;
          this.#lostShard(shard);
          throw shardMoving({ session_id: entry.session.id }, err);
        }
        if (entry.history && result.messages.length > 0) entry.history.push(...result.messages);
        if (event) entry.actor.send(event);
        return result;
      },
    };
  }

  /** Another process owns the shard now: forget it and every actor in it. */
  #lostShard(shard: number): void {
    this.#o.coordinator.lost(shard);
    this.#o.log?.warn({ shard }, 'lost ownership of a shard; dropping its actors');
    this.drop([shard]);
  }

  #wait(opId: string, waiter: Waiter): void {
    const list = this.#waiters.get(opId);
    if (list) list.push(waiter);
    else this.#waiters.set(opId, [waiter]);
  }

  #settle(opId: string, outcome: { value: unknown } | { error: unknown }): void {
    const waiters = this.#waiters.get(opId);
    this.#waiters.delete(opId);
    this.#observers.delete(opId);
    for (const w of waiters ?? []) {
      if ('error' in outcome) w.reject(outcome.error);
      else w.resolve(outcome.value);
    }
  }
}
