// Start-up memory: a process whose deliverer has nothing to send never loads undici or standardwebhooks for
// it; they are loaded with the first delivery. A resolve hook records every module this test's process
// loads from the moment it is registered, so everything below is imported after it.
import assert from 'node:assert/strict';
import { registerHooks } from 'node:module';
import { test } from 'node:test';

const resolved: string[] = [];
registerHooks({
  resolve(specifier, context, next) {
    resolved.push(specifier);
    return next(specifier, context);
  },
});
const loadedLazily = () => resolved.filter((s) => /^(undici|standardwebhooks)(\/|$)/.test(s));

test('a deliverer with nothing to send loads neither undici nor standardwebhooks; its first delivery does', async (t) => {
  const { openStore, endpoint, session, startDeliverer, startReceiver } = await import('./support.ts');
  const { waitFor } = await import('../helpers/wait.ts');
  const store = await openStore(t);
  let rounds = 0;
  // The store as it is, counting the deliverer's rounds (SqliteStore keeps private fields: bind to it).
  const counted = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (property === 'dueWebhookDeliveries') {
        return (...args: unknown[]) => {
          rounds++;
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
  const { deliverer } = startDeliverer(t, counted, { pollMs: 20 });
  await waitFor('a few rounds done', () => rounds >= 3);
  assert.deepEqual(loadedLazily(), []);

  // The receiver is node:http; the endpoint gets one event, and the deliverer loads what it needs to send it.
  const receiver = await startReceiver(t);
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  await (await session(store, tenantId)).queue('turn.completed');
  deliverer.wake();
  await waitFor(
    'the delivery recorded delivered',
    async () => (await deliveries())[0]?.status === 'delivered',
  );
  assert.deepEqual(new Set(loadedLazily()), new Set(['undici', 'standardwebhooks']));
});
