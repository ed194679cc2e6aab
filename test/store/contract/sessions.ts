// Store contract: shard claims, creating and reading sessions, listing them, expiry, and reading messages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { SHARD_COUNT, shardOf } from '../../../src/shards.ts';
import type { SessionFilter, SessionRecord } from '../../../src/store/store.ts';
import { isoInstant, type SessionFixture, unique } from './support.ts';

export function claimShards(f: SessionFixture): void {
  const { ctx, claim } = f;
  describe('claimShards', () => {
    it('bumps the epoch of each named shard by one per claim and returns the new epochs', async () => {
      const a = shardOf(newId('ses'));
      const b = (a + 1) % SHARD_COUNT;
      const first = await ctx.store.claimShards('node-a', [a, b]);
      assert.deepEqual(
        [...first.keys()].sort((x, y) => x - y),
        [a, b].sort((x, y) => x - y),
      );
      const second = await ctx.store.claimShards('node-b', [a, b]);
      assert.deepEqual(
        [...second.keys()].sort((x, y) => x - y),
        [a, b].sort((x, y) => x - y),
      );
      for (const shard of [a, b]) {
        const before = first.get(shard);
        assert.ok(Number.isInteger(before), `epoch of shard ${shard}`);
        assert.equal(second.get(shard), (before as number) + 1);
      }
      // A claim of one shard leaves the others' epochs alone.
      const third = await ctx.store.claimShards('node-c', [a]);
      assert.deepEqual([...third.keys()], [a]);
      assert.equal(third.get(a), (second.get(a) as number) + 1);
      assert.equal((await ctx.store.claimShards('node-c', [b])).get(b), (second.get(b) as number) + 1);
    });

    it('claiming a shard again always gives a strictly greater epoch', async () => {
      const shard = shardOf(newId('ses'));
      let previous = (await claim(shard)).epoch;
      for (let i = 0; i < 3; i++) {
        const next = (await claim(shard)).epoch;
        assert.ok(next > previous, `${next} > ${previous}`);
        previous = next;
      }
    });

    it("holds a fence until the shard is claimed again, and another shard's claim changes nothing", async () => {
      const shard = shardOf(newId('ses'));
      const fence = await claim(shard);
      assert.equal(await ctx.store.holdsFence(fence), true);
      await ctx.store.claimShards('node-b', [(shard + 1) % SHARD_COUNT]);
      assert.equal(await ctx.store.holdsFence(fence), true);
      const next = await claim(shard);
      assert.equal(await ctx.store.holdsFence(fence), false);
      assert.equal(await ctx.store.holdsFence(next), true);
    });
  });
}

export function createAndRead(f: SessionFixture): void {
  const { ctx, tenant, claim, inAnHour, newSession, createSession, isStale, all } = f;
  describe('createSession, getSession and loadSession', () => {
    it('a session created under the current fence is active, empty and read back identically', async () => {
      const tenantId = await tenant();
      const user = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:7' });
      const context = { locale: 'de-DE', cart: { items: [1, 2], total: 9.5 }, vip: true, none: null };
      const metadata = { channel: 'web', tags: ['a', 'é'] };
      const expiresAt = inAnHour();
      const { session, record } = await createSession(tenantId, {
        agent_id: 'sales',
        user_id: user.id,
        context,
        metadata,
        expires_at: expiresAt,
      });
      const expected: SessionRecord = {
        id: session.id,
        tenant_id: tenantId,
        agent_id: 'sales',
        user: { id: user.id, reference: 'crm:7' },
        status: 'active',
        handled_by: 'agent',
        handoff: null,
        created_at: record.created_at,
        updated_at: record.created_at,
        messages_count: 0,
        last_message_at: null,
        closed_at: null,
        close_reason: null,
        expires_at: expiresAt,
        context,
        metadata,
        shard: session.shard,
      };
      assert.deepEqual(record, expected);
      assert.match(record.created_at, isoInstant);
      assert.deepEqual(await ctx.store.getSession(tenantId, session.id), expected);
      assert.deepEqual(await ctx.store.loadSession(session.id), {
        session: expected,
        snapshot: session.snapshot,
      });
    });

    it('a session without a user has user null; a user without a reference is linked with a null one', async () => {
      const tenantId = await tenant();
      const anonymous = await createSession(tenantId);
      assert.equal(anonymous.record.user, null);
      assert.equal((await ctx.store.getSession(tenantId, anonymous.session.id))?.user, null);
      assert.deepEqual(anonymous.record.context, {});
      assert.deepEqual(anonymous.record.metadata, {});

      const user = await ctx.store.createUser(tenantId, unique('usr'), {});
      const linked = await createSession(tenantId, { user_id: user.id });
      assert.deepEqual(linked.record.user, { id: user.id, reference: null });
      assert.deepEqual((await ctx.store.loadSession(linked.session.id))?.session.user, {
        id: user.id,
        reference: null,
      });
    });

    it('createSession under a stale fence throws StaleEpochError and stores nothing', async () => {
      const tenantId = await tenant();
      const session = newSession();
      const stale = await claim(session.shard);
      const current = await claim(session.shard);
      await assert.rejects(() => ctx.store.createSession(tenantId, session, stale), isStale(session.shard));
      assert.equal(await ctx.store.getSession(tenantId, session.id), null);
      assert.equal(await ctx.store.loadSession(session.id), null);
      assert.deepEqual(await ctx.store.listSessions(tenantId, {}, all), {
        items: [],
        next_offset: null,
        next_cursor: null,
      });
      // An epoch the shard never had is refused as well: only the current one writes.
      const ahead = { shard: session.shard, epoch: current.epoch + 1 };
      await assert.rejects(() => ctx.store.createSession(tenantId, session, ahead), isStale(session.shard));
      assert.equal(await ctx.store.loadSession(session.id), null);
      // The current owner can create it.
      const record = await ctx.store.createSession(tenantId, session, current);
      assert.equal(record.id, session.id);
    });

    it("getSession is scoped to the tenant: another tenant's session reads as null", async () => {
      const owner = await tenant();
      const stranger = await tenant();
      const { record } = await createSession(owner);
      assert.equal(await ctx.store.getSession(stranger, record.id), null);
      assert.deepEqual(await ctx.store.getSession(owner, record.id), record, 'the owner still has it');
    });

    it('a commit that names metadata replaces it whole; one that does not keeps it', async () => {
      const tenantId = await tenant();
      const { record } = await createSession(tenantId);
      const fence = await claim(record.shard);
      const metadata = { stage: 'billing', 'odd key': 'é' };
      await ctx.store.commitSession({ session_id: record.id, fence, patch: { metadata, snapshot: '{}' } });
      assert.deepEqual((await ctx.store.getSession(tenantId, record.id))?.metadata, metadata);
      await ctx.store.commitSession({ session_id: record.id, fence, patch: { snapshot: '{}' } });
      assert.deepEqual((await ctx.store.getSession(tenantId, record.id))?.metadata, metadata);
    });

    it('an unknown session id reads as null', async () => {
      const tenantId = await tenant();
      assert.equal(await ctx.store.getSession(tenantId, newId('ses')), null);
      assert.equal(await ctx.store.loadSession(newId('ses')), null);
    });
  });
}

export function listSessions(f: SessionFixture): void {
  const { ctx, tenant, claim, createSession, createSessions, all } = f;
  describe('listSessions', () => {
    it("lists the tenant's sessions newest first", async () => {
      const tenantId = await tenant();
      const sessions = await createSessions(tenantId, [{}, {}, {}]);
      assert.deepEqual(await ctx.store.listSessions(tenantId, {}, all), {
        items: sessions.reverse(),
        next_offset: null,
        next_cursor: null,
      });
    });

    it('filters by status, agent, user and the scope of agents, alone and combined', async () => {
      const tenantId = await tenant();
      const ann = await ctx.store.createUser(tenantId, unique('usr'), { reference: 'crm:ann' });
      const bo = await ctx.store.createUser(tenantId, unique('usr'), {});
      const [s1, s2, s3, s4] = await createSessions(tenantId, [
        { agent_id: 'support', user_id: ann.id },
        { agent_id: 'sales', user_id: ann.id },
        { agent_id: 'support', user_id: bo.id },
        { agent_id: 'billing' },
      ]);
      assert.ok(s1 && s2 && s3 && s4);
      for (const [s, status] of [
        [s2, 'closed'],
        [s4, 'expired'],
      ] as const) {
        const fence = await claim(s.shard);
        await ctx.store.commitSession({ session_id: s.id, fence, patch: { status, snapshot: '{}' } });
      }
      const ids = async (filter: SessionFilter) =>
        (await ctx.store.listSessions(tenantId, filter, all)).items.map((s) => s.id);

      assert.deepEqual(await ids({}), [s4.id, s3.id, s2.id, s1.id]);
      assert.deepEqual(await ids({ status: 'active' }), [s3.id, s1.id]);
      assert.deepEqual(await ids({ status: 'closed' }), [s2.id]);
      assert.deepEqual(await ids({ status: 'expired' }), [s4.id]);
      assert.deepEqual(await ids({ agent_id: 'support' }), [s3.id, s1.id]);
      assert.deepEqual(await ids({ agent_id: 'nobody' }), []);
      assert.deepEqual(await ids({ user_id: ann.id }), [s2.id, s1.id]);
      assert.deepEqual(await ids({ user_id: bo.id }), [s3.id]);
      assert.deepEqual(await ids({ agent_ids: ['sales', 'billing'] }), [s4.id, s2.id]);
      assert.deepEqual(await ids({ agent_ids: ['support'] }), [s3.id, s1.id]);
      assert.deepEqual(await ids({ agent_ids: [] }), [], 'a scope of no agents lists nothing');
      assert.deepEqual(await ids({ agent_ids: ['support'], status: 'active', user_id: ann.id }), [s1.id]);
      assert.deepEqual(await ids({ agent_ids: ['sales'], agent_id: 'support' }), []);
      // The HTTP layer passes absent query parameters as undefined properties.
      const none = { status: undefined, agent_id: undefined, user_id: undefined, agent_ids: undefined };
      assert.deepEqual(await ids(none), [s4.id, s3.id, s2.id, s1.id]);
      // Listed records are whole, with the user's reference.
      const [listed] = (await ctx.store.listSessions(tenantId, { status: 'closed' }, all)).items;
      assert.deepEqual(listed, await ctx.store.getSession(tenantId, s2.id));
      assert.deepEqual(listed?.user, { id: ann.id, reference: 'crm:ann' });
    });

    it('pages carry next_offset until no session follows, even after a full last page', async () => {
      const tenantId = await tenant();
      const sessions = (await createSessions(tenantId, [{}, {}, {}, {}, {}])).reverse();
      // The cursor beside next_offset is session-list.ts's.
      const list = async (limit: number, offset: number) => {
        const { items, next_offset } = await ctx.store.listSessions(tenantId, {}, { limit, offset });
        return { items, next_offset };
      };
      assert.deepEqual(await list(2, 0), { items: sessions.slice(0, 2), next_offset: 2 });
      assert.deepEqual(await list(2, 2), { items: sessions.slice(2, 4), next_offset: 4 });
      assert.deepEqual(await list(2, 4), { items: sessions.slice(4), next_offset: null });
      assert.deepEqual(await list(3, 2), { items: sessions.slice(2), next_offset: null });
      assert.deepEqual(await list(5, 0), { items: sessions, next_offset: null });
      assert.deepEqual(await list(2, 5), { items: [], next_offset: null });
    });

    it("a tenant never lists another tenant's sessions", async () => {
      const owner = await tenant();
      const stranger = await tenant();
      const { record } = await createSession(owner, { agent_id: 'support' });
      const none = { items: [], next_offset: null, next_cursor: null };
      assert.deepEqual(await ctx.store.listSessions(stranger, {}, all), none);
      assert.deepEqual(await ctx.store.listSessions(stranger, { agent_id: 'support' }, all), none);
      assert.deepEqual(await ctx.store.listSessions(owner, {}, all), {
        items: [record],
        next_offset: null,
        next_cursor: null,
      });
    });
  });
}

export function dueForExpiry(f: SessionFixture): void {
  const { ctx, tenant, claim, createSessions } = f;
  describe('sessionsDueForExpiry', () => {
    it('returns active sessions whose expiry has passed, oldest expiry first, up to the limit', async () => {
      // Expiries in 1995, against a `now` of that time: unaffected by what other tests store for today.
      const now = Date.parse('1995-03-01T12:00:00.000Z');
      const iso = (ms: number) => new Date(now + ms).toISOString();
      const tenantId = await tenant();
      const created = await createSessions(tenantId, [
        { expires_at: iso(-1) },
        { expires_at: iso(-60_000) },
        { expires_at: iso(-30_000) },
        { expires_at: iso(0) },
        { expires_at: iso(60_000) },
      ]);
      const [late, oldest, closed, exact, future] = created;
      assert.ok(late && oldest && closed && exact && future);
      const closedFence = await claim(closed.shard);
      await ctx.store.commitSession({
        session_id: closed.id,
        fence: closedFence,
        patch: { status: 'closed', closed_at: iso(-40_000), snapshot: '{}' },
      });
      const ours = new Set(created.map((s) => s.id));
      const due = await ctx.store.sessionsDueForExpiry(iso(0), 1000);
      // A shared database may hold other due sessions; ours come in expiry order among them.
      assert.deepEqual(
        due.filter((id) => ours.has(id)),
        [oldest.id, late.id],
      );
      assert.equal((await ctx.store.sessionsDueForExpiry(iso(0), 1)).length, 1, 'the limit is kept');
      // A process asks only for the shards it owns.
      assert.deepEqual(
        (await ctx.store.sessionsDueForExpiry(iso(0), 1000, [oldest.shard])).filter((id) => ours.has(id)),
        [oldest, late].filter((s) => s.shard === oldest.shard).map((s) => s.id),
      );
      assert.deepEqual(await ctx.store.sessionsDueForExpiry(iso(0), 1000, []), []);
      // The expiry moves on with `now`.
      assert.deepEqual(
        (await ctx.store.sessionsDueForExpiry(iso(60_001), 1000)).filter((id) => ours.has(id)),
        [oldest.id, late.id, exact.id, future.id],
      );
      // Expiring the sessions leaves nothing due behind for later runs on a shared database.
      for (const s of [late, oldest, exact, future]) {
        await ctx.store.commitSession({
          session_id: s.id,
          fence: await claim(s.shard),
          patch: { status: 'expired', snapshot: '{}' },
        });
      }
      assert.deepEqual(
        (await ctx.store.sessionsDueForExpiry(iso(60_001), 1000)).filter((id) => ours.has(id)),
        [],
      );
    });
  });
}

export function readMessages(f: SessionFixture): void {
  const { ctx, tenant, createSession, message, stored, all } = f;
  describe('getMessage and listMessages', () => {
    it('getMessage finds a message only through its own tenant and session', async () => {
      const tenantId = await tenant();
      const stranger = await tenant();
      const { record, fence } = await createSession(tenantId);
      const m = message(newId('turn'), 'user', 'Hi');
      const at = new Date().toISOString();
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        at,
        messages: [m],
        patch: { snapshot: '{}' },
      });
      // Created after the commit: on the same shard (one in 1,024) its claim would make `fence` stale.
      const sibling = await createSession(tenantId);
      const [expected] = stored(record.id, at, [m]);
      assert.deepEqual(await ctx.store.getMessage(tenantId, record.id, m.id), expected);
      assert.equal(await ctx.store.getMessage(stranger, record.id, m.id), null);
      assert.equal(await ctx.store.getMessage(tenantId, sibling.record.id, m.id), null);
      assert.equal(await ctx.store.getMessage(tenantId, record.id, newId('msg')), null);
    });

    it("listMessages is null for another tenant's or an unknown session, and empty for a new one", async () => {
      const tenantId = await tenant();
      const stranger = await tenant();
      const { record, fence } = await createSession(tenantId);
      assert.deepEqual(await ctx.store.listMessages(tenantId, record.id, all), {
        items: [],
        next_offset: null,
      });
      await ctx.store.commitSession({
        session_id: record.id,
        fence,
        messages: [message(newId('turn'), 'user', 'Hi')],
        patch: { snapshot: '{}' },
      });
      assert.equal(await ctx.store.listMessages(stranger, record.id, all), null);
      assert.equal(await ctx.store.listMessages(tenantId, newId('ses'), all), null);
      assert.equal((await ctx.store.listMessages(tenantId, record.id, all))?.items.length, 1);
    });
  });
}
