// Store contract: webhook endpoints per tenant, and the outbox of their deliveries: queued in the transaction
// of the change an event reports, handed to the deliverer when due and in order per endpoint and key (each
// queued behind the one before it), claimed and recorded only as read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { shardOf } from '../../../src/shards.ts';
import type { Feedback, Webhook, WebhookDelivery, WebhookEvent } from '../../../src/store/store.ts';
import { isoInstant, type OpenStore, pastInstant, unique } from './support.ts';
import { webhookFixture } from './webhook-support.ts';

export function webhooks(open: OpenStore): void {
  describe('webhooks', () => {
    const {
      ctx,
      tenant,
      claim,
      createSession,
      isStale,
      all,
      endpoint,
      event,
      queue,
      deliveries,
      eventIds,
      deliveryOf,
      iso,
      due,
      attempt,
      record,
      deliverAll,
    } = webhookFixture(open);

    it('createWebhook returns the endpoint without its secret; get and list read it back, oldest first, per tenant', async () => {
      const tenantA = await tenant();
      const tenantB = await tenant();
      const { webhook: first } = await endpoint(tenantA, ['session.closed', 'turn.completed']);
      await pastInstant(first.created_at);
      const { webhook: second } = await endpoint(tenantA, ['user.deleted']);
      const { webhook: other } = await endpoint(tenantB, ['feedback.submitted']);

      assert.deepEqual(Object.keys(first).sort(), ['created_at', 'events', 'id', 'url']);
      assert.match(first.created_at, isoInstant);
      assert.deepEqual(first.events, ['session.closed', 'turn.completed']);
      assert.deepEqual(await ctx.store.getWebhook(tenantA, first.id), first);
      assert.deepEqual(await ctx.store.listWebhooks(tenantA), [first, second]);
      assert.deepEqual(await ctx.store.listWebhooks(tenantB), [other]);
      assert.equal(await ctx.store.getWebhook(tenantB, first.id), null, "another tenant's endpoint");
      assert.equal(await ctx.store.getWebhook(tenantA, newId('wh')), null);
      assert.deepEqual(await ctx.store.listWebhooks(await tenant()), []);
      for (const listed of [
        ...(await ctx.store.listWebhooks(tenantA)),
        await ctx.store.getWebhook(tenantA, first.id),
      ]) {
        assert.ok(listed && !('secret' in listed), 'no secret in a listed endpoint');
      }
    });

    it('a commit queues one pending delivery of each event for each endpoint of the tenant subscribed to its type', async () => {
      const tenantId = await tenant();
      const { webhook: both, secret } = await endpoint(tenantId, ['session.closed', 'turn.completed']);
      const { webhook: turns } = await endpoint(tenantId, ['turn.completed']);
      const { webhook: users } = await endpoint(tenantId, ['user.deleted']);
      const otherTenant = await tenant();
      const { webhook: elsewhere } = await endpoint(otherTenant, ['session.closed', 'turn.completed']);

      const completed = event(tenantId, 'turn.completed', { created_at: iso(0) });
      const closed = event(tenantId, 'session.closed', { created_at: iso(1) });
      assert.equal(await queue(tenantId, [completed, closed]), 3, 'the deliveries the commit queued');

      assert.deepEqual(await eventIds(tenantId, both.id), [completed.id, closed.id].sort());
      assert.deepEqual(await eventIds(tenantId, turns.id), [completed.id]);
      assert.deepEqual(await eventIds(tenantId, users.id), [], 'not subscribed to the type');
      assert.deepEqual(await eventIds(otherTenant, elsewhere.id), [], "another tenant's endpoint");

      const [listed] = await deliveries(tenantId, turns.id);
      assert.ok(listed);
      assert.match(listed.id, /^whd_/);
      assert.deepEqual(listed, {
        id: listed.id,
        webhook_id: turns.id,
        event_id: completed.id,
        type: 'turn.completed',
        status: 'pending',
        attempts: 0,
        last_status_code: null,
        error: null,
        last_attempt_at: null,
        next_attempt_at: completed.created_at,
        created_at: completed.created_at,
      });

      // The deliverer gets what sending needs: the endpoint's url and secret, and the payload as written.
      const ours = new Set([both.id, turns.id, users.id, elsewhere.id]);
      const dueNow = (await ctx.store.dueWebhookDeliveries(iso(1), 1000)).filter((d) =>
        ours.has(d.webhook_id),
      );
      const sent = dueNow.find((d) => d.webhook_id === both.id && d.event_id === closed.id);
      assert.ok(sent);
      assert.deepEqual(sent, {
        id: sent.id,
        tenant_id: tenantId,
        webhook_id: both.id,
        event_id: closed.id,
        type: 'session.closed',
        ordering_key: closed.ordering_key,
        shard: closed.shard,
        attempts: 0,
        next_attempt_at: closed.created_at,
        url: both.url,
        secret,
        created_at: closed.created_at,
        endpoint_failures: 0,
        endpoint_retry_at: null,
      });
      assert.equal(await ctx.store.webhookPayload(closed.id), closed.payload, 'the payload as written');
      assert.equal(dueNow.length, 3);
      await deliverAll(iso(1), ours);
    });

    it('a commit whose events no endpoint subscribes to goes through, and an endpoint created later gets none of them', async () => {
      const tenantId = await tenant();
      const { record, fence } = await createSession(tenantId);
      const result = await ctx.store.commitSession({
        session_id: record.id,
        fence,
        patch: { status: 'closed', closed_at: new Date().toISOString(), snapshot: '{}' },
        webhookEvents: [event(tenantId, 'session.closed', { ordering_key: record.id })],
      });
      assert.equal(result.messages_count, 0);
      assert.equal(result.webhook_deliveries, 0, 'no endpoint subscribes');
      assert.equal((await ctx.store.getSession(tenantId, record.id))?.status, 'closed');
      // An endpoint created afterwards does not receive an event of before it.
      const { webhook } = await endpoint(tenantId, ['session.closed']);
      assert.deepEqual(await deliveries(tenantId, webhook.id), []);
    });

    it('a commit with a stale fence queues nothing, while a current one committed with it queues its events', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['session.closed']);
      const fenced = await createSession(tenantId);
      // Another session on another shard, so that fencing out the first leaves it current.
      let otherId = newId('ses');
      while (shardOf(otherId) === fenced.record.shard) otherId = newId('ses');
      const current = await createSession(tenantId, { id: otherId });
      await claim(fenced.record.shard);

      const lost = event(tenantId, 'session.closed', { ordering_key: fenced.record.id });
      const kept = event(tenantId, 'session.closed', { ordering_key: current.record.id });
      // Together, so that a store grouping commits into one transaction has both in it.
      const [stale, fine] = await Promise.allSettled([
        ctx.store.commitSession({
          session_id: fenced.record.id,
          fence: fenced.fence,
          patch: { status: 'closed', closed_at: new Date().toISOString(), snapshot: '{}' },
          webhookEvents: [lost],
        }),
        ctx.store.commitSession({
          session_id: current.record.id,
          fence: current.fence,
          patch: { status: 'closed', closed_at: new Date().toISOString(), snapshot: '{}' },
          webhookEvents: [kept],
        }),
      ]);
      assert.ok(stale.status === 'rejected' && isStale(fenced.record.shard)(stale.reason));
      assert.equal(fine.status === 'fulfilled' && fine.value.webhook_deliveries, 1);
      assert.deepEqual(await eventIds(tenantId, webhook.id), [kept.id]);

      // Alone, too.
      await assert.rejects(
        () =>
          ctx.store.commitSession({
            session_id: fenced.record.id,
            fence: fenced.fence,
            patch: { snapshot: '{}' },
            webhookEvents: [event(tenantId, 'session.closed', { ordering_key: fenced.record.id })],
          }),
        isStale(fenced.record.shard),
      );
      assert.deepEqual(await eventIds(tenantId, webhook.id), [kept.id]);
    });

    it('deleteUser queues the event its callback builds from the deletion instant, and only when a user was deleted', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['user.deleted']);
      const userId = unique('usr');
      await ctx.store.createUser(tenantId, userId, {});
      const instants: string[] = [];
      /** The event as the service builds it: stamped, and reporting `deleted_at`, with the store's instant. */
      const report = (forUser: string) => (deletedAt: string) => {
        instants.push(deletedAt);
        return event(tenantId, 'user.deleted', {
          ordering_key: forUser,
          created_at: deletedAt,
          payload: JSON.stringify({ type: 'user.deleted', data: { id: forUser, deleted_at: deletedAt } }),
        });
      };
      const before = Date.now();
      assert.equal(await ctx.store.deleteUser(tenantId, userId, report(userId)), true);
      const after = Date.now();
      const [deletedAt] = instants;
      assert.equal(instants.length, 1);
      assert.ok(deletedAt);
      assert.match(deletedAt, isoInstant);
      assert.ok(Date.parse(deletedAt) >= before && Date.parse(deletedAt) <= after, 'the delete’s instant');
      const [queued] = await deliveries(tenantId, webhook.id);
      assert.equal(queued?.created_at, deletedAt);
      const [sent] = (await ctx.store.dueWebhookDeliveries(deletedAt, 1000)).filter(
        (d) => d.webhook_id === webhook.id,
      );
      assert.ok(sent);
      assert.equal(
        JSON.parse((await ctx.store.webhookPayload(sent.event_id)) ?? '{}').data.deleted_at,
        deletedAt,
      );

      assert.equal(await ctx.store.deleteUser(tenantId, userId, report(userId)), false, 'already deleted');
      const unknown = unique('usr');
      assert.equal(await ctx.store.deleteUser(tenantId, unknown, report(unknown)), false);
      assert.equal(instants.length, 1, 'no event is built for a delete that did not happen');
      assert.equal((await deliveries(tenantId, webhook.id)).length, 1);

      // Without an event a delete queues nothing.
      const quiet = unique('usr');
      await ctx.store.createUser(tenantId, quiet, {});
      assert.equal(await ctx.store.deleteUser(tenantId, quiet), true);
      assert.equal((await deliveries(tenantId, webhook.id)).length, 1);
      await deliverAll(new Date(after + 1000).toISOString(), new Set([webhook.id]));
    });

    it('upsertFeedback queues the event its callback builds from the feedback as stored', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['feedback.submitted']);
      const { record } = await createSession(tenantId);
      const seen: Feedback[] = [];
      const report = (stored: Feedback) => {
        seen.push(stored);
        return event(tenantId, 'feedback.submitted', {
          ordering_key: record.id,
          payload: JSON.stringify({ type: 'feedback.submitted', data: stored }),
        });
      };
      const first = await ctx.store.upsertFeedback(
        record.id,
        { id: newId('fb'), score: 9, comment: 'Good', metadata: {} },
        report,
      );
      const second = await ctx.store.upsertFeedback(
        record.id,
        { id: newId('fb'), score: 3, comment: null, metadata: { again: true } },
        report,
      );
      assert.deepEqual(seen, [first, second]);
      assert.equal(second.id, first.id, 'the event sees the kept id, not the one passed');

      const list = await deliveries(tenantId, webhook.id);
      assert.equal(list.length, 2);
      const ours = new Set([webhook.id]);
      const dueNow = (await ctx.store.dueWebhookDeliveries(new Date().toISOString(), 1000)).filter((d) =>
        ours.has(d.webhook_id),
      );
      const payloads = await Promise.all(
        dueNow.map(async (d) => JSON.parse((await ctx.store.webhookPayload(d.event_id)) ?? '{}').data),
      );
      // The second is queued behind the first (same endpoint, same key): it has no due time yet.
      assert.deepEqual(payloads, [first]);
      assert.deepEqual(
        list.map((d) => d.next_attempt_at === null),
        [true, false],
      );
      await deliverAll(new Date(Date.now() + 1000).toISOString(), ours);
    });

    it('due deliveries are the pending ones whose time has come, earliest first, in the given shards, up to the limit', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const ours = new Set([webhook.id]);
      // Different keys: none waits for another.
      const early = event(tenantId, 'turn.completed', { created_at: iso(-60_000) });
      const late = event(tenantId, 'turn.completed', { created_at: iso(-1) });
      const exact = event(tenantId, 'turn.completed', { created_at: iso(0) });
      const future = event(tenantId, 'turn.completed', { created_at: iso(60_000) });
      await queue(tenantId, [late, future, early, exact]);
      const pair = (e: WebhookEvent) => `${webhook.id}:${e.id}`;

      assert.deepEqual(await due(iso(0), ours), [early, late, exact].map(pair));
      assert.equal((await ctx.store.dueWebhookDeliveries(iso(0), 1)).length, 1, 'the limit is kept');
      assert.deepEqual(await due(iso(60_000), ours), [early, late, exact, future].map(pair));

      // A process asks only for the shards it owns.
      assert.deepEqual(
        await due(iso(0), ours, [early.shard]),
        [early, late, exact].filter((e) => e.shard === early.shard).map(pair),
      );
      assert.deepEqual(await ctx.store.dueWebhookDeliveries(iso(0), 1000, []), []);

      // A retry is due again at its next attempt; a delivered or failed one never.
      await attempt(await deliveryOf(tenantId, webhook.id, early), 'pending', 503, iso(0), iso(5_000));
      await attempt(await deliveryOf(tenantId, webhook.id, late), 'delivered', 204, iso(0), null);
      await attempt(await deliveryOf(tenantId, webhook.id, exact), 'failed', 410, iso(0), null);
      assert.deepEqual(await due(iso(0), ours), []);
      assert.deepEqual(await due(iso(5_000), ours), [early].map(pair));
      assert.deepEqual(await due(iso(60_000), ours), [early, future].map(pair));
      await deliverAll(iso(60_000), ours);
    });

    it('a later delivery of an endpoint and key is queued behind a pending one, due only when that one is delivered or failed; other keys and endpoints are not held', async () => {
      const tenantId = await tenant();
      const { webhook: one } = await endpoint(tenantId, ['turn.completed', 'session.closed']);
      const { webhook: two } = await endpoint(tenantId, ['turn.completed', 'session.closed']);
      const ours = new Set([one.id, two.id]);
      const key = newId('ses');
      // The later events are stamped earlier: order per key is the order written, not the event's time.
      const k1 = event(tenantId, 'turn.completed', { ordering_key: key, created_at: iso(-10) });
      const k2 = event(tenantId, 'turn.completed', { ordering_key: key, created_at: iso(-20) });
      const k3 = event(tenantId, 'session.closed', { ordering_key: key, created_at: iso(-30) });
      const other = event(tenantId, 'turn.completed', { created_at: iso(-40) });
      // Queued behind one of the same commit, and behind one of an earlier commit.
      await queue(tenantId, [k1, k2]);
      await queue(tenantId, [k3, other]);
      const pair = (w: Webhook, e: WebhookEvent) => `${w.id}:${e.id}`;
      const of = (w: Webhook, e: WebhookEvent) => deliveryOf(tenantId, w.id, e);
      const nextAttempt = async (w: Webhook, e: WebhookEvent) => (await of(w, e)).next_attempt_at;

      const never = iso(1e12);
      for (const at of [iso(0), never]) {
        assert.deepEqual(await due(at, ours), [
          pair(one, other),
          pair(two, other),
          pair(one, k1),
          pair(two, k1),
        ]);
      }
      for (const w of [one, two]) {
        assert.equal(await nextAttempt(w, k2), null, 'blocked: no due time');
        assert.equal(await nextAttempt(w, k3), null);
      }

      // Delivered: the next of its key falls due at the attempt's time, on that endpoint only.
      await attempt(await of(one, k1), 'delivered', 200, iso(5), null);
      assert.equal(await nextAttempt(one, k2), iso(5));
      assert.equal(await nextAttempt(two, k2), null);
      assert.deepEqual(await due(iso(4), ours), [pair(one, other), pair(two, other), pair(two, k1)]);
      assert.deepEqual(await due(iso(5), ours), [
        pair(one, other),
        pair(two, other),
        pair(two, k1),
        pair(one, k2),
      ]);
      assert.equal(await nextAttempt(one, k3), null, 'still behind k2');

      // Pending again, to be retried later: the next of its key stays blocked.
      await attempt(await of(one, k2), 'pending', 500, iso(10), iso(1_000));
      assert.equal(await nextAttempt(one, k3), null);
      assert.deepEqual(await due(iso(10), ours), [pair(one, other), pair(two, other), pair(two, k1)]);
      assert.deepEqual(await due(never, ours), [
        pair(one, other),
        pair(two, other),
        pair(two, k1),
        pair(one, k2),
      ]);

      // Given up on: the next of its key goes.
      await attempt(await of(one, k2), 'failed', 500, iso(1_000), null);
      assert.equal(await nextAttempt(one, k3), iso(1_000));
      assert.deepEqual(await due(iso(1_000), ours), [
        pair(one, other),
        pair(two, other),
        pair(two, k1),
        pair(one, k3),
      ]);

      // Once the key has nothing pending, a new delivery of it is due at once.
      await attempt(await of(one, k3), 'delivered', 200, iso(1_001), null);
      const k4 = event(tenantId, 'turn.completed', { ordering_key: key, created_at: iso(1_002) });
      await queue(tenantId, [k4]);
      assert.equal(await nextAttempt(one, k4), iso(1_002));
      assert.equal(await nextAttempt(two, k4), null, 'the other endpoint still has k1 to k3 pending');
      // Each delivered in turn: every one falls due once the one before it is delivered.
      await deliverAll(iso(1_002), ours);
      const statuses = (await deliveries(tenantId, two.id)).map((d) => d.status);
      assert.deepEqual(statuses, ['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
    });

    it('a claim counts the attempt and stamps it; its record keeps the status code and the next attempt', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.failed']);
      const failed = event(tenantId, 'turn.failed', { created_at: iso(0) });
      await queue(tenantId, [failed]);
      const [queued] = await deliveries(tenantId, webhook.id);
      assert.ok(queued);
      const claim = { id: queued.id, attempts: 0, next_attempt_at: iso(0) };

      assert.equal(await ctx.store.claimWebhookDelivery({ ...claim, at: iso(100), until: iso(600) }), true);
      assert.deepEqual(await deliveries(tenantId, webhook.id), [
        { ...queued, attempts: 1, last_attempt_at: iso(100), next_attempt_at: iso(600) },
      ]);
      assert.equal(await record({ id: queued.id, attempts: 1 }, 'pending', null, iso(100), iso(1_100)), true);
      assert.deepEqual(await deliveries(tenantId, webhook.id), [
        {
          ...queued,
          attempts: 1,
          last_status_code: null,
          error: 'timeout',
          last_attempt_at: iso(100),
          next_attempt_at: iso(1_100),
        },
      ]);
      const again = { id: queued.id, attempts: 1, next_attempt_at: iso(1_100) };
      assert.equal(await attempt(again, 'pending', 502, iso(1_200), iso(6_200)), true);
      assert.equal(
        await attempt(
          { id: queued.id, attempts: 2, next_attempt_at: iso(6_200) },
          'delivered',
          200,
          iso(6_300),
          null,
        ),
        true,
      );
      const delivered: WebhookDelivery = {
        ...queued,
        status: 'delivered',
        attempts: 3,
        last_status_code: 200,
        last_attempt_at: iso(6_300),
        next_attempt_at: null,
      };
      assert.deepEqual(await deliveries(tenantId, webhook.id), [delivered]);

      // A late record (of an attempt whose claim lapsed and was taken again) writes nothing, nor does one of a
      // delivery no longer pending, or unknown.
      assert.equal(
        await record({ id: queued.id, attempts: 2 }, 'pending', 503, iso(7_000), iso(8_000)),
        false,
      );
      assert.equal(
        await record({ id: queued.id, attempts: 3 }, 'pending', 503, iso(7_000), iso(8_000)),
        false,
      );
      assert.deepEqual(await deliveries(tenantId, webhook.id), [delivered], 'delivered stays delivered');
      assert.equal(
        await record({ id: newId('whd'), attempts: 1 }, 'delivered', 200, iso(7_000), null),
        false,
      );
    });

    it('an attempt whose claim lapsed unrecorded stays counted; its record after the next claim is refused, and of two records at once one counts', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const completed = event(tenantId, 'turn.completed', { created_at: iso(0) });
      await queue(tenantId, [completed]);
      const [queued] = await deliveries(tenantId, webhook.id);
      assert.ok(queued);

      // Claimed, then its process was killed: nothing recorded, the claim lapses at iso(10).
      const first = { id: queued.id, attempts: 0, next_attempt_at: iso(0) };
      assert.equal(await ctx.store.claimWebhookDelivery({ ...first, at: iso(1), until: iso(10) }), true);
      const [cutOff] = await deliveries(tenantId, webhook.id);
      assert.deepEqual(
        [cutOff?.status, cutOff?.attempts, cutOff?.last_attempt_at, cutOff?.next_attempt_at],
        ['pending', 1, iso(1), iso(10)],
      );
      // The next owner reads it due at the claim's end, with the attempt counted, and claims it in turn.
      const [read] = (await ctx.store.dueWebhookDeliveries(iso(10), 1000)).filter(
        (d) => d.webhook_id === webhook.id,
      );
      assert.deepEqual([read?.attempts, read?.next_attempt_at], [1, iso(10)]);
      assert.equal(
        await ctx.store.claimWebhookDelivery({ ...first, at: iso(11), until: iso(20) }),
        false,
        'stale',
      );
      const second = { id: queued.id, attempts: 1, next_attempt_at: iso(10) };
      assert.equal(await ctx.store.claimWebhookDelivery({ ...second, at: iso(11), until: iso(20) }), true);
      assert.equal(
        await record({ id: queued.id, attempts: 1 }, 'delivered', 200, iso(12), null),
        false,
        'lapsed',
      );

      const results = await Promise.all([
        record({ id: queued.id, attempts: 2 }, 'delivered', 200, iso(12), null),
        record({ id: queued.id, attempts: 2 }, 'pending', 503, iso(12), iso(30)),
      ]);
      assert.equal(results.filter(Boolean).length, 1);
      const [recorded] = await deliveries(tenantId, webhook.id);
      assert.equal(recorded?.attempts, 2);
      assert.equal(recorded?.status, results[0] ? 'delivered' : 'pending');
      await deliverAll(iso(30), new Set([webhook.id]));
    });

    it('releaseWebhookClaim makes a claimed delivery due at once, the attempt counted, and only while the claim holds', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const ours = new Set([webhook.id]);
      const completed = event(tenantId, 'turn.completed', { created_at: iso(0) });
      await queue(tenantId, [completed]);
      const [queued] = await deliveries(tenantId, webhook.id);
      assert.ok(queued);
      const claim = { id: queued.id, attempts: 0, next_attempt_at: iso(0), at: iso(1), until: iso(10_000) };
      assert.equal(await ctx.store.claimWebhookDelivery(claim), true);
      const claimed = { id: queued.id, attempts: 1, until: iso(10_000) };

      assert.equal(await ctx.store.releaseWebhookClaim({ ...claimed, attempts: 0, at: iso(2) }), false);
      assert.equal(await ctx.store.releaseWebhookClaim({ ...claimed, until: iso(9_999), at: iso(2) }), false);
      assert.equal(await ctx.store.releaseWebhookClaim({ ...claimed, at: iso(2) }), true);
      const [released] = await deliveries(tenantId, webhook.id);
      assert.deepEqual([released?.attempts, released?.next_attempt_at], [1, iso(2)]);
      assert.deepEqual(await due(iso(2), ours), [`${webhook.id}:${completed.id}`]);
      assert.equal(
        await ctx.store.releaseWebhookClaim({ ...claimed, at: iso(3) }),
        false,
        'given back already',
      );
      await deliverAll(iso(2), ours);
    });

    it('a commit reports how many deliveries it queued, each write of a group its own', async () => {
      const tenantId = await tenant();
      await endpoint(tenantId, ['turn.completed', 'session.closed']);
      await endpoint(tenantId, ['session.closed']);
      const ours = new Set((await ctx.store.listWebhooks(tenantId)).map((w) => w.id));
      // One after the other: two sessions of one shard created at once would each claim it, and the first
      // claim's fence would be stale by its insert (one run in a few hundred).
      const a = await createSession(tenantId);
      const b = await createSession(tenantId);
      const c = await createSession(tenantId);
      // Together, so that a store grouping commits into one transaction has all three in it.
      const results = await Promise.all(
        [
          [event(tenantId, 'turn.completed'), event(tenantId, 'session.closed')],
          [event(tenantId, 'user.deleted')],
          [],
        ].map((events, i) => {
          const s = [a, b, c][i];
          assert.ok(s);
          return ctx.store.commitSession({
            session_id: s.record.id,
            fence: s.fence,
            patch: { snapshot: '{}' },
            webhookEvents: events,
          });
        }),
      );
      assert.deepEqual(
        results.map((r) => r.webhook_deliveries),
        [3, 0, 0],
      );
      await deliverAll(new Date(Date.now() + 1000).toISOString(), ours);
    });

    it('a commit queueing behind the first delivery of its key while that one is recorded never leaves its delivery blocked with nothing before it', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const { record, fence } = await createSession(tenantId);
      const commit = (e: WebhookEvent) =>
        ctx.store.commitSession({
          session_id: record.id,
          fence,
          patch: { snapshot: '{}' },
          webhookEvents: [e],
        });
      const turn = (round: number) =>
        event(tenantId, 'turn.completed', { ordering_key: record.id, created_at: iso(round * 10) });

      let head = turn(0);
      assert.equal((await commit(head)).webhook_deliveries, 1);
      // Each round queues the next event while the one before it is recorded delivered, at once: on a store
      // with a pool of connections, the two transactions interleave either way.
      for (let round = 1; round <= 50; round++) {
        const queued = await deliveryOf(tenantId, webhook.id, head);
        const next = turn(round);
        const [committed, recorded] = await Promise.all([
          commit(next),
          attempt(queued, 'delivered', 200, iso(round * 10 + 5), null),
        ]);
        assert.equal(committed.webhook_deliveries, 1);
        assert.equal(recorded, true);
        // Its predecessor is delivered: whichever went first, the new one must be due now.
        const pending = (await deliveries(tenantId, webhook.id)).filter((d) => d.status === 'pending');
        assert.deepEqual(
          pending.map((d) => d.event_id),
          [next.id],
          `round ${round}`,
        );
        assert.ok(pending[0]?.next_attempt_at !== null, `round ${round}: blocked with nothing before it`);
        head = next;
      }
      await deliverAll(iso(1_000), new Set([webhook.id]));
    });

    it('two changes queueing events of one key at once leave only the first of them due', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed', 'feedback.submitted']);
      const ours = new Set([webhook.id]);
      const { record, fence } = await createSession(tenantId);
      for (let round = 1; round <= 20; round++) {
        // A session's commit and its feedback, each in a transaction of its own, with nothing pending before.
        const at = iso(round * 10);
        await Promise.all([
          ctx.store.commitSession({
            session_id: record.id,
            fence,
            patch: { snapshot: '{}' },
            webhookEvents: [event(tenantId, 'turn.completed', { ordering_key: record.id, created_at: at })],
          }),
          ctx.store.upsertFeedback(
            record.id,
            { id: newId('fb'), score: round % 11, comment: null, metadata: {} },
            () => event(tenantId, 'feedback.submitted', { ordering_key: record.id, created_at: at }),
          ),
        ]);
        const pending = (await deliveries(tenantId, webhook.id)).filter((d) => d.status === 'pending');
        assert.deepEqual(
          pending.map((d) => d.next_attempt_at === null).sort(),
          [false, true],
          `round ${round}: one due, one behind it`,
        );
        await deliverAll(at, ours);
      }
    });

    it('listWebhookDeliveries pages newest first, and is null for an endpoint that is not the tenant’s', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const at = new Date().toISOString();
      const oldest = event(tenantId, 'turn.completed', { created_at: iso(0) });
      // Two of the same instant: the one written later is the newer.
      const same1 = event(tenantId, 'turn.completed', { created_at: at });
      const same2 = event(tenantId, 'turn.completed', { created_at: at });
      await queue(tenantId, [same1, oldest, same2]);

      const first = await ctx.store.listWebhookDeliveries(tenantId, webhook.id, { limit: 2, offset: 0 });
      assert.deepEqual(
        first?.items.map((d) => d.event_id),
        [same2.id, same1.id],
      );
      assert.equal(first?.next_offset, 2);
      const rest = await ctx.store.listWebhookDeliveries(tenantId, webhook.id, { limit: 2, offset: 2 });
      assert.deepEqual(
        rest?.items.map((d) => d.event_id),
        [oldest.id],
      );
      assert.equal(rest?.next_offset, null);

      assert.equal(await ctx.store.listWebhookDeliveries(await tenant(), webhook.id, all), null);
      assert.equal(await ctx.store.listWebhookDeliveries(tenantId, newId('wh'), all), null);
      await deliverAll(iso(0), new Set([webhook.id]));
    });

    it('deleteWebhook removes the tenant’s endpoint with its deliveries, and no other', async () => {
      const tenantId = await tenant();
      const { webhook: gone } = await endpoint(tenantId, ['session.expired']);
      const { webhook: stays } = await endpoint(tenantId, ['session.expired']);
      const expired = event(tenantId, 'session.expired', { created_at: iso(0) });
      await queue(tenantId, [expired]);
      const ours = new Set([gone.id, stays.id]);
      assert.equal((await due(iso(0), ours)).length, 2);

      assert.equal(
        await ctx.store.deleteWebhook(await tenant(), gone.id),
        false,
        "another tenant's endpoint",
      );
      assert.equal(await ctx.store.deleteWebhook(tenantId, gone.id), true);
      assert.equal(await ctx.store.deleteWebhook(tenantId, gone.id), false, 'already deleted');
      assert.equal(await ctx.store.getWebhook(tenantId, gone.id), null);
      assert.deepEqual(await ctx.store.listWebhooks(tenantId), [stays]);
      assert.equal(await ctx.store.listWebhookDeliveries(tenantId, gone.id, all), null);
      assert.deepEqual(await due(iso(0), ours), [`${stays.id}:${expired.id}`]);
      assert.deepEqual(await eventIds(tenantId, stays.id), [expired.id]);

      // A later event goes to the endpoints left.
      const next = event(tenantId, 'session.expired', { created_at: iso(1) });
      await queue(tenantId, [next]);
      assert.deepEqual(await eventIds(tenantId, stays.id), [expired.id, next.id].sort());
      await deliverAll(iso(1), ours);
    });

    it('deleteOldWebhookDeliveries deletes delivered and failed deliveries created before the instant, never pending ones', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      // 1980: before any other test's deliveries, so that the count is this test's alone.
      const old = Date.parse('1980-01-01T00:00:00.000Z');
      const at = (ms: number) => new Date(old + ms).toISOString();
      const delivered = event(tenantId, 'turn.completed', { created_at: at(0) });
      const failed = event(tenantId, 'turn.completed', { created_at: at(1) });
      const pending = event(tenantId, 'turn.completed', { created_at: at(2) });
      const recent = event(tenantId, 'turn.completed', { created_at: at(10_000) });
      await queue(tenantId, [delivered, failed, pending, recent]);
      const of = (e: WebhookEvent) => deliveryOf(tenantId, webhook.id, e);
      await attempt(await of(delivered), 'delivered', 200, at(20_000), null);
      await attempt(await of(failed), 'failed', 404, at(20_000), null);
      await attempt(await of(recent), 'delivered', 200, at(20_000), null);

      assert.equal(await ctx.store.deleteOldWebhookDeliveries(at(10_000), 1), 1, 'at most the limit');
      assert.equal(await ctx.store.deleteOldWebhookDeliveries(at(10_000), 100), 1);
      assert.deepEqual(await eventIds(tenantId, webhook.id), [pending.id, recent.id].sort());
      assert.equal(await ctx.store.deleteOldWebhookDeliveries(at(10_000), 100), 0);
      await deliverAll(at(10_000), new Set([webhook.id]));
    });
  });
}
