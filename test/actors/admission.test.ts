// The admission of turns by the bytes they hold (docs/internals/decisions.md#resident-memory): turns that fit
// start at once, the others wait in order of arrival and start as room frees; a tenant holds at most its
// share, so another tenant's turns pass its waiting ones; past the queue's bound, or after waiting its
// longest, a turn is refused with 503 server_busy and Retry-After; cached bytes give way to reserved ones.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Admission, type Reservation } from '../../src/actors/admission.ts';
import { AppError } from '../../src/errors.ts';
import { defaultResidentBytes, ResidentBytes } from '../../src/resident-bytes.ts';

const MiB = 1024 * 1024;

function admission(
  options: { maxBytes?: number; share?: number; maxWaiting?: number; maxWaitMs?: number } = {},
) {
  const resident = new ResidentBytes({ maxBytes: options.maxBytes ?? 1000, rss: null });
  return {
    resident,
    admission: new Admission({
      resident,
      tenantShare: options.share ?? 1,
      maxWaiting: options.maxWaiting ?? 10,
      maxWaitMs: options.maxWaitMs ?? 60_000,
    }),
  };
}

/** Whether the promise has settled by the time the microtasks queued now have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

/** The refusal `promise` ends with: 503 server_busy with Retry-After, and its reason. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => assert.fail('admitted'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof AppError && err.code === 'server_busy', String(err));
  assert.equal(err.statusCode, 503);
  assert.equal(err.headers?.['retry-after'], '2');
  return String(err.context?.reason);
}

describe('the admission of turns', () => {
  test('turns that fit start at once; one that does not waits and starts when room frees, in the order they came', async () => {
    const { admission: a, resident } = admission();
    const first = await a.admit('t1', 600);
    const second = a.admit('t1', 500);
    const third = a.admit('t2', 100);
    assert.equal(await settled(second), false, 'the bound holds it back');
    assert.equal(await settled(third), false, 'a turn that would fit waits behind one the bound holds back');
    assert.equal(a.waiting, 2);
    assert.equal(resident.reserved, 600);
    first.release();
    first.release();
    assert.equal((await second).bytes, 500);
    assert.equal((await third).bytes, 100);
    assert.equal(resident.reserved, 600);
    assert.equal(a.waiting, 0);
  });

  test("a tenant holds at most its share: another tenant's turns pass its waiting ones, its own later ones do not", async () => {
    const { admission: a } = admission({ share: 0.5 });
    const held = await a.admit('busy', 450);
    const big = a.admit('busy', 100);
    const small = a.admit('busy', 10);
    assert.equal(await settled(big), false, "held back by its tenant's share");
    assert.equal(await settled(small), false, "its tenant's earlier turn goes first");
    const other = await a.admit('other', 400);
    assert.equal(other.bytes, 400, "another tenant's turn starts at once");
    held.release();
    await big;
    await small;
  });

  test('a turn estimated above a tenant’s share counts as the share, and runs alone among its tenant’s turns', async () => {
    const { admission: a } = admission({ share: 0.5 });
    const huge = await a.admit('t1', 5000);
    assert.equal(huge.bytes, 500);
    const next = a.admit('t1', 1);
    assert.equal(await settled(next), false);
    huge.release();
    await next;
  });

  test('a reservation shrinks to what the turn holds, which lets waiting turns in, and grows without waiting', async () => {
    const { admission: a, resident } = admission();
    const turn = await a.admit('t1', 900);
    const waiting = a.admit('t1', 500);
    turn.resize(400);
    await waiting;
    turn.resize(700);
    assert.equal(resident.reserved, 1200, 'a turn that grows is counted, never stopped');
    const later = a.admit('t2', 1);
    assert.equal(await settled(later), false);
    turn.release();
    await later;
  });

  test('past the queue’s bound, or its tenant’s share of it, a turn is refused at once with 503 server_busy', async () => {
    const { admission: a } = admission({ share: 0.5, maxWaiting: 4 });
    const held = await a.admit('t1', 500);
    const waiting: Promise<Reservation>[] = [a.admit('t1', 500), a.admit('t1', 500)];
    assert.equal(await refusal(a.admit('t1', 500)), 'tenant_queue_full');
    await a.admit('t2', 500);
    waiting.push(a.admit('t2', 500), a.admit('t2', 500));
    assert.equal(await refusal(a.admit('t3', 500)), 'queue_full');
    assert.equal(a.waiting, 4);
    held.release();
    await waiting[0];
    a.close();
    await Promise.allSettled(waiting);
  });

  test('a turn that waited its longest is refused, and the turns it held back may start', async () => {
    const { admission: a } = admission({ maxWaitMs: 50 });
    const held = await a.admit('t1', 800);
    const big = a.admit('t1', 900);
    const small = a.admit('t2', 100);
    assert.equal(await refusal(big), 'waited_too_long');
    assert.equal((await small).bytes, 100, 'no longer behind the big one');
    held.release();
  });

  test('cached bytes give way to what turns reserve, and have only the room turns leave', async () => {
    const { admission: a, resident } = admission();
    const released: string[] = [];
    resident.hold('history', 600, () => released.push('history'));
    const turn = await a.admit('t1', 700);
    assert.deepEqual(released, ['history']);
    assert.equal(resident.limit, 300);
    assert.equal(
      resident.hold('file', 400, () => {}),
      false,
    );
    turn.release();
    assert.equal(
      resident.hold('file', 400, () => {}),
      true,
    );
  });

  test('stopping refuses the waiting turns and every later one with 503 service_unavailable', async () => {
    const { admission: a } = admission();
    await a.admit('t1', 1000);
    const waiting = a.admit('t1', 1);
    a.close();
    for (const promise of [waiting, a.admit('t2', 1)]) {
      await assert.rejects(
        promise,
        (err: unknown) => err instanceof AppError && err.code === 'service_unavailable',
      );
    }
  });

  test('with a bound of 0 nothing is counted and every turn starts', async () => {
    const { admission: a } = admission({ maxBytes: 0 });
    assert.equal((await a.admit('t1', 10 * MiB)).bytes, 0);
    assert.equal((await a.admit('t1', 10 * MiB)).bytes, 0);
  });
});

describe('the default bound', () => {
  const heapLimit = 4 * 1024 * MiB;
  test('is half of what a cgroup allows the process', () => {
    const total = 64 * 1024 * MiB;
    assert.equal(defaultResidentBytes({ constrained: 1024 * MiB, total, heapLimit }), 512 * MiB);
  });

  test('is a quarter of the machine when no cgroup limits the process, at most half the heap limit', () => {
    const total = 4 * 1024 * MiB;
    assert.equal(defaultResidentBytes({ constrained: 0, total, heapLimit }), 1024 * MiB);
    assert.equal(
      defaultResidentBytes({ constrained: 2 ** 64, total, heapLimit }),
      1024 * MiB,
      'cgroup v2 "max"',
    );
    assert.equal(defaultResidentBytes({ constrained: 0, total: 24 * 1024 * MiB, heapLimit }), 2048 * MiB);
  });
});
