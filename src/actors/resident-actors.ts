// The session actors resident in this process: activated from the store on first use (one load however
// many callers ask at once), kept in least-recently-used order under a cap, and dropped when idle, handed
// over, lost or shut down. What an actor holds is already committed, so dropping one writes nothing.
import { type AnyActorRef, createActor, fromTransition } from 'xstate';
import type { Coordinator } from '../cluster/coordinator.ts';
import { shardMoving } from '../errors.ts';
import type { OperationRef, SessionActor, SessionMachine } from '../machines/session.ts';
import type { ResidentBytes } from '../resident-bytes.ts';
import type { SessionRecord, Store } from '../store/store.ts';
import type { ActorMetrics } from './actor-metrics.ts';
import { CachedHistory } from './cached-history.ts';

export interface SessionEntry {
  /** The session row as activated; `messages_count` follows the commits of this process. */
  readonly session: SessionRecord;
  /** The session's latest messages, kept between turns while the resident bytes allow. Gone with the actor. */
  readonly history: CachedHistory;
  readonly actor: SessionActor;
  lastUsed: number;
  /**
   * How many commits may have written an Idempotency-Key record or answer: a key lookup made at an earlier
   * count may be stale (idempotency.ts).
   */
  keyedCommits: number;
  /** The lifetime the running operation's last commit stored, for its DONE to apply (fenced-commit.ts). */
  doneExpiresAt?: number;
  /** The turn an operation of the session runs now, for a cancel to reach it (session-host.ts). */
  running?: RunningTurn;
}

/** A turn being run: which one, and how a cancel stops it. */
export interface RunningTurn {
  turnId: string;
  /** Aborts its model call; the turn ends with what it has (docs/internals/decisions.md#cancel). */
  cancel(): void;
}

/** Why an actor left memory (the `reason` label of parley_actor_passivations_total). */
export type DropReason = 'idle' | 'lru' | 'manual' | 'handover' | 'lost' | 'shutdown';

export interface ResidentActorsOptions {
  store: Store;
  coordinator: Coordinator;
  /** The machine with the host's actions provided: one for every session. */
  machine: SessionMachine;
  metrics: ActorMetrics;
  /** Most actors kept in memory (docs/internals/architecture.md#session-actors: 50,000). */
  maxResident: number;
  /** The bytes the process keeps for its sessions: their histories count against it. */
  resident: ResidentBytes;
  maxWaiting?: number;
  /** An actor was activated from the store and started. */
  activated?(entry: SessionEntry): void;
}

export class ResidentActors {
  readonly #o: ResidentActorsOptions;
  /** In least-recently-used order: a use moves the entry to the end. */
  readonly #entries = new Map<string, SessionEntry>();
  readonly #activating = new Map<string, Promise<SessionEntry | null>>();
  /** The parent of every session actor here, whose XState system they share (systemRoot()). */
  readonly #root = systemRoot();

  constructor(options: ResidentActorsOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The session's entry if its actor is in memory now, without counting it as a use. */
  resident(sessionId: string): SessionEntry | undefined {
    return this.#entries.get(sessionId);
  }

  /** The session's entry, activating it when needed; null when there is no such session. */
  async get(sessionId: string): Promise<SessionEntry | null> {
    const resident = this.#entries.get(sessionId);
    if (resident) {
      resident.lastUsed = Date.now();
      this.#entries.delete(sessionId);
      // Keyed by the row's id, not the caller's: that one may be a slice of its request's URL, and keep it.
      this.#entries.set(resident.session.id, resident);
      return resident;
    }
    let pending = this.#activating.get(sessionId);
    if (!pending) {
      pending = this.#activate(sessionId).finally(() => this.#activating.delete(sessionId));
      this.#activating.set(sessionId, pending);
    }
    return pending;
  }

  /** Nothing runs or waits in the actor. */
  isIdle(entry: SessionEntry): boolean {
    const { context } = entry.actor.getSnapshot();
    return context.current === null && context.queue.length === 0;
  }

  /** Drops the idle actors last used before `since`. */
  passivateIdle(since: number): void {
    for (const [id, entry] of this.#entries) {
      if (entry.lastUsed < since && this.isIdle(entry)) this.drop(id, 'idle');
    }
  }

  /** Drops the session's actor if it is idle; false when it is not resident or busy. */
  passivate(sessionId: string): boolean {
    const entry = this.#entries.get(sessionId);
    if (!entry || !this.isIdle(entry)) return false;
    this.drop(sessionId, 'manual');
    return true;
  }

  /** The resident entries of `shards`. */
  inShards(shards: ReadonlySet<number>): SessionEntry[] {
    return [...this.#entries.values()].filter((entry) => shards.has(entry.session.shard));
  }

  /** Every resident session id. */
  ids(): string[] {
    return [...this.#entries.keys()];
  }

  /** Drops the session's actor; returns the operations that were still waiting in it, for their callers. */
  drop(sessionId: string, reason: DropReason): OperationRef[] {
    const entry = this.#entries.get(sessionId);
    if (!entry) return [];
    this.#entries.delete(sessionId);
    const waiting = entry.actor.getSnapshot().context.queue;
    stopChild(entry.actor);
    entry.history.forget();
    this.#o.metrics.passivations.inc({ reason });
    this.#o.metrics.resident.set(this.#entries.size);
    return waiting;
  }

  async #activate(requested: string): Promise<SessionEntry | null> {
    const loaded = await this.#o.store.loadSession(requested);
    if (!loaded) return null;
    const { session } = loaded;
    // The row's id from here on: the caller's may be a slice of its request's URL, which it would keep alive
    // for as long as the actor (a hundred bytes a session).
    const sessionId = session.id;
    if (!this.#o.coordinator.serves(session.shard)) throw shardMoving({ session_id: sessionId });
    const actor = createSessionActor(this.#o, this.#root, sessionId, session, loaded.snapshot);
    const history = new CachedHistory(this.#o.resident);
    const entry: SessionEntry = { session, history, actor, lastUsed: Date.now(), keyedCommits: 0 };
    // In the map before it starts: its operations find their entry by session id.
    this.#entries.set(sessionId, entry);
    actor.start();
    // Its input too is read only by its constructor and start(); the rest of its options stay.
    (actor as unknown as { options: { input?: unknown } }).options.input = undefined;
    this.#o.activated?.(entry);
    this.#o.metrics.activations.inc();
    this.#evictOverCap(sessionId);
    this.#o.metrics.resident.set(this.#entries.size);
    return entry;
  }

  /** Drops the least recently used idle actors over the cap, never `keep` (just activated for a caller). */
  #evictOverCap(keep: string): void {
    if (this.#entries.size <= this.#o.maxResident) return;
    for (const [id, entry] of this.#entries) {
      if (this.#entries.size <= this.#o.maxResident) break;
      if (id !== keep && this.isIdle(entry)) this.drop(id, 'lru');
    }
  }
}

/**
 * The parent of the session actors of one process: they share its XState system, where a root actor builds
 * its own (a scheduler, registries and some twenty closures: measured, 4,366 B of heap an idle actor as a root,
 * 2,536 B under a shared parent). It keeps no state; their done events are nothing to it, and their errors
 * are thrown out of a timer, as XState reports the unhandled error of a root actor.
 */
function systemRoot(): AnyActorRef {
  const logic = fromTransition((state: null, event: { type: string; error?: unknown }) => {
    if (event.type.startsWith('xstate.error.actor')) {
      setTimeout(() => {
        throw event.error;
      });
    }
    return state;
  }, null);
  return createActor(logic).start();
}

/**
 * Stops a session actor: what `stop()` does for a root actor, which XState refuses to a child (its parent
 * would stop it in a transition; this one has none).
 */
function stopChild(actor: SessionActor): void {
  (actor as unknown as { _stop(): void })._stop();
}

/** The session's actor, not started, restored from its stored snapshot (or new, for a row without one). */
function createSessionActor(
  o: ResidentActorsOptions,
  parent: AnyActorRef,
  sessionId: string,
  session: SessionRecord,
  snapshot: string | null,
): SessionActor {
  const actor = createActor(o.machine, {
    parent,
    ...(snapshot ? { snapshot: JSON.parse(snapshot) } : {}),
    input: {
      sessionId,
      expiresAt: Date.parse(session.expires_at ?? '') || Date.now(),
      maxWaiting: o.maxWaiting,
    },
  });
  // The actor keeps its options for life, and the stored snapshot in them (some 450 B parsed), which only its
  // constructor reads: the actor's own snapshot was made from it already. Its input goes once it has started.
  (actor.options as { snapshot?: unknown }).snapshot = undefined;
  return actor;
}
