// The session actor host: one XState actor per session this process owns. A caller's operation goes to the
// session's actor, which queues it and starts one at a time; the host runs it (operations.ts) and answers its
// callers. A paused turn that can go on is moved on when its actor is activated, after each operation and by
// the sweep; a cancel reaches the turn it names while it runs. The parts: the resident actors
// (resident-actors.ts), who waits on what (calls.ts), the fenced commit (fenced-commit.ts), what stops a turn
// (turn-controls.ts) and the sweeper (sweeper.ts).
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AnyActorRef } from 'xstate';
import type { Coordinator, ShardHandler } from '../cluster/coordinator.ts';
import { AppError, serviceUnavailable, sessionNotFound, shardMoving } from '../errors.ts';
import { canMoveOn, resumeOpId } from '../machines/paused-turn.ts';
import {
  type OperateInput,
  type OperationKind,
  type OperationRef,
  type SessionMachine,
  type SessionStatus,
  statusOf,
} from '../machines/session.ts';
import type { ResidentBytes } from '../resident-bytes.ts';
import { shardOf } from '../shards.ts';
import { StaleEpochError, type Store } from '../store/store.ts';
import { inTraceContext, traceOperation } from '../tracing/tracer.ts';
import type { ActorMetrics } from './actor-metrics.ts';
import { answeringMachine, Calls, type Outcome, statusError } from './calls.ts';
import { commitFenced, confirmFence, type FencedCommitDeps } from './fenced-commit.ts';
import type { OperationContext, TurnObserver } from './operation-context.ts';
import type { Operation, OperationRunner, ResultOf } from './operations.ts';
import { type DropReason, ResidentActors, type SessionEntry } from './resident-actors.ts';
import { Sweeper } from './sweeper.ts';
import { TurnControls } from './turn-controls.ts';

export interface SessionHostOptions {
  store: Store;
  coordinator: Coordinator;
  run: OperationRunner;
  metrics: ActorMetrics;
  /** Most actors kept in memory (docs/internals/architecture.md#session-actors: 50,000). */
  maxResident: number;
  /** The bytes kept for sessions between requests (histories, file contents), under one bound. */
  resident: ResidentBytes;
  /** Idle time after which an actor is passivated (10 min). */
  idleMs: number;
  /** How often to passivate idle actors and expire due sessions. */
  sweepMs: number;
  maxWaiting?: number;
  /** A commit queued webhook events (the deliverer looks at once instead of at its next poll). */
  queuedWebhookEvents?(): void;
  /** A commit appended events to a session's log (its open event streams read them at once). */
  sessionEvents?(sessionId: string, seq: number): void;
  /** The sessions of `tenantId` are deleted by the sweep `afterMs` after their creation (the demo's). */
  retention?: { tenantId: string; afterMs: number };
  log?: { warn(obj: unknown, msg?: string): void; error(obj: unknown, msg?: string): void };
}

export { statusError };

const shuttingDown = () => serviceUnavailable('The service is shutting down.');

/** An answer that the client's request was refused (4xx), as opposed to a failure of the service. */
const isRefusal = (err: unknown) => err instanceof AppError && err.statusCode < 500;

/** How long running turns may still take when their shards are handed over or the process stops. */
export const TURN_GRACE_MS = 10_000;

export class SessionHost implements ShardHandler {
  readonly #o: SessionHostOptions;
  readonly #residents: ResidentActors;
  /** Sessions whose deletion runs now (the sweep's retention): activating one answers that it does not exist. */
  readonly #deleting = new Set<string>();
  readonly #calls = new Calls((sessionId) => this.confirmOwner(sessionId));
  readonly #sweeper: Sweeper;
  readonly #commitDeps: FencedCommitDeps;
  readonly #running = new Set<Promise<unknown>>();
  readonly #shutdown = new AbortController();
  readonly #turns = new TurnControls();
  #closing = false;

  constructor(options: SessionHostOptions) {
    this.#o = options;
    this.#residents = new ResidentActors({
      ...options,
      machine: this.#provideMachine(),
      // Restored with a paused turn that can go on (decided, or a call expired): it goes on.
      activated: (entry) => queueMicrotask(() => this.#moveOnIfDue(entry)),
    });
    this.#sweeper = new Sweeper({
      ...options,
      residents: this.#residents,
      expireIfDue: (sessionId) => this.expireIfDue(sessionId),
      deleteSession: (sessionId) => this.deleteSession(sessionId),
      wake: (sessionId) => this.wake(sessionId),
    });
    this.#commitDeps = {
      store: options.store,
      fence: (shard) => options.coordinator.fence(shard),
      lost: (shard) => this.#lostShard(shard),
      queuedWebhookEvents: options.queuedWebhookEvents,
      sessionEvents: options.sessionEvents,
    };
    // Every running model call listens on it: as many listeners as turns in flight, not a leak.
    setMaxListeners(0, this.#shutdown.signal);
  }

  start(): void {
    this.#sweeper.start();
  }

  /**
   * Stops sweeping, refuses waiting operations, lets running ones finish for up to `graceMs`, then aborts
   * them and drops every actor.
   */
  async close(graceMs = TURN_GRACE_MS): Promise<void> {
    this.#sweeper.stop();
    // Waiting operations are refused from now on; running ones may finish within the grace time.
    this.#closing = true;
    const settled = Promise.allSettled([...this.#running]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.#shutdown.abort(new Error('shutting down'));
    this.#turns.abortAll(new Error('shutting down'));
    await settled;
    for (const id of this.#residents.ids()) this.#drop(id, 'shutdown', shuttingDown);
  }

  get residentCount(): number {
    return this.#residents.size;
  }

  /** The session's actor entry, activating it when needed; null when there is no such session. */
  entry(sessionId: string): Promise<SessionEntry | null> {
    // A session being deleted is gone already: no request may activate it behind the deletion's back.
    if (this.#deleting.has(sessionId)) return Promise.resolve(null);
    return this.#residents.get(sessionId);
  }

  /** The session's status as its actor holds it. */
  status(entry: SessionEntry): SessionStatus {
    return statusOf(entry.actor.getSnapshot());
  }

  /** Hands `op` to the session's actor and waits for its answer; `observer` watches it run. */
  async submit<K extends OperationKind>(
    given: SessionEntry,
    op: Operation<K>,
    observer?: TurnObserver,
  ): Promise<ResultOf<K>> {
    const sessionId = given.session.id;
    // The actor may have been dropped (LRU, idle, lost shard) since the caller looked it up.
    const entry = this.#residents.resident(sessionId) === given ? given : await this.entry(sessionId);
    if (!entry) throw sessionNotFound(sessionId);
    const status = this.status(entry);
    if (status !== 'active') throw statusError(status, sessionId);
    if (!this.#o.coordinator.serves(entry.session.shard)) throw shardMoving({ session_id: sessionId });
    // Open before the actor sees it: the machine may answer at once (busy, joined, key reused).
    const answer = traceOperation(entry.session, op, () => this.#calls.open(op, observer));
    const key = op.idempotency && { key: op.idempotency.key, fingerprint: op.idempotency.fingerprint };
    const ref = { id: op.id, kind: op.kind, ...key, ...(op.by ? { by: op.by } : {}) };
    entry.actor.send({ type: 'SUBMIT', op: ref, at: Date.now() });
    return answer;
  }

  /**
   * Resolves while the store still holds this process's fence of the session's shard; else the shard is given
   * up and it rejects with shard_moving. Called before an answer decided from the actor's memory alone.
   */
  confirmOwner(sessionId: string): Promise<void> {
    return confirmFence(this.#commitDeps, sessionId);
  }

  /**
   * Cancels turn `turnId` where it runs now (its model call is aborted; it stores what it has); whether it
   * ran. The cancel operation that follows answers the caller once that is committed.
   */
  cancelRunning(entry: SessionEntry, turnId: string): boolean {
    return this.#turns.cancel(entry, turnId);
  }

  /** The sweep found the session's paused turn due: expired calls are denied, a decided turn goes on. */
  async wake(sessionId: string): Promise<void> {
    const entry = await this.entry(sessionId);
    if (entry) this.#moveOnIfDue(entry);
  }

  /** Queues the resume of the session's paused turn when nothing runs and it can go on; answers no one. */
  #moveOnIfDue(entry: SessionEntry): void {
    const snapshot = entry.actor.getSnapshot();
    if (snapshot.status !== 'active' || snapshot.context.current !== null) return;
    if (!canMoveOn(snapshot.context.paused, Date.now())) return;
    const op: Operation<'resume'> = { id: resumeOpId(entry.session.id), kind: 'resume', payload: null };
    this.submit(entry, op).catch((err) =>
      this.#o.log?.warn(
        { err, session_id: entry.session.id },
        'a paused turn could not go on; the sweep retries',
      ),
    );
  }

  /** Expires the session if its time has passed (the lazy check behind every read). */
  async expireIfDue(sessionId: string): Promise<void> {
    const entry = await this.entry(sessionId);
    if (!entry || this.status(entry) !== 'active') return;
    if (Date.now() < entry.actor.getSnapshot().context.expiresAt) return;
    const op: Operation<'expire'> = { id: `expire_${sessionId}`, kind: 'expire', payload: null };
    await this.submit(entry, op).catch((err) => {
      if (!(err instanceof AppError && err.code === 'session_expired')) throw err;
    });
  }

  /**
   * Deletes a session with everything it holds, unless an operation of it runs or waits here (false: the
   * next sweep tries again). Its actor goes first, so nothing of it writes afterwards.
   */
  async deleteSession(sessionId: string): Promise<boolean> {
    if (this.#residents.resident(sessionId) && !this.#residents.passivate(sessionId)) return false;
    const shard = shardOf(sessionId);
    const fence = this.#o.coordinator.fence(shard);
    if (!fence) return false;
    this.#deleting.add(sessionId);
    try {
      return await this.#o.store.deleteSession(sessionId, fence);
    } catch (err) {
      if (!(err instanceof StaleEpochError)) throw err;
      this.#lostShard(shard);
      return false;
    } finally {
      this.#deleting.delete(sessionId);
      // An activation that began before the deletion did may have finished meanwhile: its actor holds a
      // session that is gone (a commit of it would answer 404); drop it.
      this.#residents.passivate(sessionId);
    }
  }

  /** Passivates idle actors and expires due sessions; runs every `sweepMs`. */
  sweep(): Promise<void> {
    return this.#sweeper.sweep();
  }

  /** Drops an actor from memory; what it holds is already committed. */
  passivate(sessionId: string): boolean {
    return this.#residents.passivate(sessionId);
  }

  /**
   * Hands shards over: their running and queued operations finish (for up to `graceMs`; the coordinator
   * already refuses new ones), then their actors are dropped.
   */
  async release(shards: readonly number[], graceMs = TURN_GRACE_MS): Promise<void> {
    const set = new Set(shards);
    const deadline = Date.now() + graceMs;
    const busy = () => this.#residents.inShards(set).some((entry) => !this.#residents.isIdle(entry));
    while (Date.now() < deadline && busy()) await sleep(20);
    for (const entry of this.#residents.inShards(set)) this.#drop(entry.session.id, 'handover');
  }

  /** The shards are lost without notice: their actors go at once (their writes would be refused). */
  drop(shards: readonly number[]): void {
    for (const entry of this.#residents.inShards(new Set(shards))) this.#drop(entry.session.id, 'lost');
  }

  /** Drops an actor from memory; callers still waiting in its queue get `error` (default: shard_moving). */
  #drop(sessionId: string, reason: DropReason, error?: () => AppError): void {
    const fail = error ?? (() => shardMoving({ session_id: sessionId }));
    for (const op of this.#residents.drop(sessionId, reason)) this.#calls.reject(op, fail());
  }

  /** The machine with this host's side effects: running operations (one machine for all sessions). */
  #provideMachine(): SessionMachine {
    // Run once the transition that started it is over, so the operation sees the actor's new snapshot.
    return answeringMachine(this.#calls, ({ self }, input) =>
      queueMicrotask(() => void this.#operate(self, input)),
    );
  }

  /** Runs one operation, answers its callers, then tells the actor, which starts the next one. */
  async #operate(actor: AnyActorRef, { sessionId, op }: OperateInput): Promise<void> {
    // The actor that started it may have been dropped (and the session activated anew) in the meantime.
    const resident = this.#residents.resident(sessionId);
    const entry = resident?.actor === actor ? resident : undefined;
    const work = this.#closing
      ? Promise.reject(shuttingDown())
      : !entry
        ? Promise.reject(shardMoving({ session_id: sessionId }))
        : this.#execute(entry, op);
    this.#running.add(work);
    let answer: () => void;
    try {
      answer = await work;
    } catch (err) {
      answer = () => this.#calls.reject(op, err);
    } finally {
      this.#running.delete(work);
    }
    // The callers are answered and the actor told in one step: a duplicate reaching the machine in between
    // would be joined to this operation while its call is already gone.
    answer();
    // A closed or expired session's actor is done, and a dropped one stopped: neither runs anything more.
    const expiresAt = entry?.doneExpiresAt;
    if (entry) entry.doneExpiresAt = undefined;
    if (actor.getSnapshot().status === 'active') {
      actor.send(
        expiresAt === undefined ? { type: 'DONE', opId: op.id } : { type: 'DONE', opId: op.id, expiresAt },
      );
      // An operation that left a paused turn able to go on (an expiry applied by a refused decision): it goes
      // on now. Not after a resume that could not: the sweep tries again later.
      if (entry && op.kind !== 'resume') this.#moveOnIfDue(entry);
    }
  }

  /** Runs the operation `ref` names in its session's context; returns how to answer its callers. */
  async #execute<K extends OperationKind>(
    entry: SessionEntry,
    ref: OperationRef & { kind: K },
  ): Promise<() => void> {
    const call = this.#calls.get(ref);
    if (!call) return () => {};
    const control = this.#turns.open(entry);
    let wrote = false;
    const context: OperationContext = {
      entry,
      observer: call.observer,
      reservation: call.op.reservation,
      signal: this.#shutdown.signal,
      get turnSignal() {
        return control.turnSignal;
      },
      cancelled: control.cancelled,
      runsTurn: control.runsTurn,
      commit: (change) => {
        wrote = true;
        return commitFenced(this.#commitDeps, entry, change);
      },
    };
    let outcome: Outcome<ResultOf<K>>;
    try {
      outcome = { value: await inTraceContext(call.trace, () => this.#o.run(context, call.op)) };
    } catch (error) {
      outcome = { error };
    } finally {
      control.done();
    }
    // Reached without writing, an answer or a refusal rests on the actor's memory: the store confirms it first
    // (a failure of the service is answered as it is; a retry reaches the owner anyway).
    const confirm = !wrote && ('value' in outcome || isRefusal(outcome.error));
    return () => this.#calls.settle(ref, outcome, confirm ? entry.session.id : undefined);
  }

  /** Another process owns the shard now: forget it and every actor in it. */
  #lostShard(shard: number): void {
    this.#o.coordinator.lost(shard);
    this.#o.log?.warn({ shard }, 'lost ownership of a shard; dropping its actors');
    this.drop([shard]);
  }
}
