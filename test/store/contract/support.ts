// What the Store contract's areas share: opening a fresh store per test, unique ids, waiting out the
// clock's millisecond, and creating sessions under a current fence.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach } from 'node:test';
import { AppError } from '../../../src/errors.ts';
import { newId } from '../../../src/ids.ts';
import { shardOf } from '../../../src/shards.ts';
import type {
  Fence,
  MessageRecord,
  NewMessage,
  NewSession,
  SessionRecord,
  Store,
} from '../../../src/store/store.ts';
import { fullUsage, StaleEpochError } from '../../../src/store/store.ts';

/**
 * Opens a store for one test. It may share its database with other tests (ids are unique per test and
 * global counts are compared before and after), and may or may not be migrated yet: the suite migrates.
 * The suite closes the store before calling `cleanup`.
 */
export type OpenStore = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

export const isoInstant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Unique per call, so that tests sharing one database never see each other's rows. */
export const unique = (prefix: string) => `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until the clock has passed `instant`: the store stamps records with millisecond precision, so
 * ordering and exclusive-bound assertions need records that were not created within the same millisecond.
 */
export async function pastInstant(instant: string): Promise<void> {
  const target = Date.parse(instant);
  while (Date.now() <= target) await sleep(1);
}

export const isReferenceConflict = (err: unknown) =>
  err instanceof AppError && err.code === 'user_reference_conflict' && err.statusCode === 409;

export interface StoreContext {
  store: Store;
  closed: boolean;
  /** Closes now, for tests about a closed store; the hook then does not close again. */
  closeNow(): Promise<void>;
}

/** Registers hooks that give each test of the enclosing describe a fresh store. */
export function useStore(open: OpenStore, options: { migrate: boolean }): StoreContext {
  const context = {
    store: undefined as unknown as Store,
    closed: false,
    async closeNow() {
      context.closed = true;
      await context.store.close();
    },
  };
  let cleanup: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    const opened = await open();
    context.store = opened.store;
    context.closed = false;
    cleanup = opened.cleanup;
    if (options.migrate) await context.store.migrate();
  });
  afterEach(async () => {
    try {
      if (!context.closed) await context.store.close();
    } finally {
      await cleanup?.();
      cleanup = undefined;
    }
  });
  return context;
}

/** A new tenant of the describe's store; its id. */
export const newTenant = async (ctx: { store: Store }) =>
  (await ctx.store.createTenant(unique('t'), 'Tenant')).id;

/** Creating sessions in a describe's store: a session needs a tenant and the current fence of its shard. */
export function sessionHelpers(ctx: { store: Store }) {
  /** Takes ownership of a shard as a new node would, and returns its fence. */
  async function claim(shard: number): Promise<Fence> {
    const epochs = await ctx.store.claimShards(unique('node'), [shard]);
    const epoch = epochs.get(shard);
    assert.ok(epoch !== undefined, `an epoch for shard ${shard}`);
    return { shard, epoch };
  }

  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

  function newSession(fields: Partial<NewSession> = {}): NewSession {
    const id = fields.id ?? newId('ses');
    return {
      id,
      agent_id: 'support',
      user_id: null,
      shard: shardOf(id),
      context: {},
      metadata: {},
      expires_at: inAnHour(),
      snapshot: JSON.stringify({ status: 'active', value: 'idle', context: { sessionId: id } }),
      ...fields,
    };
  }

  /** Creates a session under a freshly claimed fence of its shard. */
  async function createSession(tenantId: string, fields: Partial<NewSession> = {}) {
    const session = newSession(fields);
    const fence = await claim(session.shard);
    const record = await ctx.store.createSession(tenantId, session, fence);
    return { session, record, fence };
  }

  return { claim, inAnHour, newSession, createSession };
}

/** The store and helpers of the sessions area (sessions.ts, commits.ts, idempotency.ts). */
export function sessionFixture(ctx: StoreContext) {
  const tenant = () => newTenant(ctx);

  const { claim, inAnHour, newSession, createSession } = sessionHelpers(ctx);

  /** Creates sessions one millisecond apart, so that "newest first" has one right answer. */
  async function createSessions(tenantId: string, sessions: Partial<NewSession>[]) {
    const created: SessionRecord[] = [];
    for (const fields of sessions) {
      const previous = created.at(-1);
      if (previous) await pastInstant(previous.created_at);
      created.push((await createSession(tenantId, fields)).record);
    }
    return created;
  }

  function message(turnId: string, role: 'user' | 'assistant', text: string): NewMessage {
    return { id: newId('msg'), role, content: [{ type: 'text', text }], metadata: null, turn_id: turnId };
  }

  /** The stored form of messages committed at `at`. */
  const stored = (sessionId: string, at: string, messages: NewMessage[]): MessageRecord[] =>
    messages.map((m) => ({
      ...m,
      session_id: sessionId,
      created_at: at,
      stop_reason: m.stop_reason ?? null,
      author: m.author ?? null,
      tool_calls: m.tool_calls ?? null,
      usage: m.usage ? fullUsage(m.usage) : null,
    }));

  const isStale = (shard: number) => (err: unknown) => err instanceof StaleEpochError && err.shard === shard;

  const snapshotOf = async (id: string) => (await ctx.store.loadSession(id))?.snapshot;

  const all = { limit: 100, offset: 0 };

  /** ISO instants `ms` milliseconds after the start of a test. */
  const after = (start: number, ms: number) => new Date(start + ms).toISOString();

  return {
    ctx,
    tenant,
    claim,
    inAnHour,
    newSession,
    createSession,
    createSessions,
    message,
    stored,
    isStale,
    snapshotOf,
    all,
    after,
  };
}

export type SessionFixture = ReturnType<typeof sessionFixture>;
