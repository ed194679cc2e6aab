// Tracing off costs nothing: without an endpoint no OpenTelemetry package is loaded at all. A resolve hook
// records every module this test's process loads from the moment it is registered, so everything below is
// imported after it: the server's entry module, the app, a session and a send.
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
// The API package alone is not the SDK: prom-client loads it for its exemplars, tracing or not.
const telemetry = /^(@opentelemetry\/(?!api$)|@fastify\/otel|import-in-the-middle|require-in-the-middle)/;

test('without an endpoint, serving a send loads none of the OpenTelemetry SDK nor its instrumentations', async () => {
  await import('../../src/server.ts');
  const { buildTestApp } = await import('../helpers/app.ts');
  const t = await buildTestApp();
  try {
    const headers = { 'x-api-key': t.apiKey };
    const session = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/demo/sessions',
      headers,
      payload: {},
    });
    assert.equal(session.statusCode, 201, session.body);
    const sent = await t.app.inject({
      method: 'POST',
      url: `/v1/agents/sessions/${session.json().id}/messages`,
      headers,
      payload: { content: 'Untraced' },
    });
    assert.equal(sent.statusCode, 201, sent.body);
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.doesNotMatch(metrics.body, /parley_trace_/);
  } finally {
    await t.close();
  }
  assert.ok(resolved.includes('fastify'), 'the hook saw the app load');
  assert.deepEqual(
    resolved.filter((s) => telemetry.test(s)),
    [],
  );
});
