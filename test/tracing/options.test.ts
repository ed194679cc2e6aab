// The OTEL_* variables as config.ts reads them: no endpoint, no tracing; the traces endpoint and its base;
// headers, protocol, sampler and batch settings; a bad value stops the start naming the variable, never
// repeating a header's value; and no tool may be handed an OTEL_* variable.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';

describe('the tracing configuration', () => {
  it('is off without an endpoint, and off with OTEL_SDK_DISABLED=true', () => {
    assert.equal(loadConfig({}).tracing, null);
    assert.equal(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_BSP_MAX_QUEUE_SIZE: '10' }).tracing, null);
    const disabled = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' };
    assert.equal(loadConfig(disabled).tracing, null);
  });

  it('sends to <endpoint>/v1/traces with the standard defaults', () => {
    const tracing = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing;
    assert.deepEqual(tracing, {
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      timeoutMs: 10_000,
      compression: 'none',
      serviceName: 'parley',
      resourceAttributes: {},
      sampler: { kind: 'parentbased_always_on' },
      batch: { scheduleDelayMs: 5000, exportTimeoutMs: 30_000, maxQueueSize: 2048, maxExportBatchSize: 512 },
      captureContent: false,
    });
  });

  it('takes the per-signal variables over the general ones', () => {
    const tracing = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-team=core,authorization=Basic%20abc',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=traces',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2000',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=from-resource',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    }).tracing;
    assert.ok(tracing);
    assert.equal(tracing.url, 'https://traces.example.com/otlp/v1/traces');
    assert.equal(tracing.protocol, 'http/json');
    assert.deepEqual(tracing.headers, { 'x-team': 'traces', authorization: 'Basic abc' });
    assert.equal(tracing.timeoutMs, 2000);
    assert.equal(tracing.compression, 'gzip');
    assert.equal(tracing.serviceName, 'from-resource');
    assert.deepEqual(tracing.sampler, { kind: 'parentbased_traceidratio', ratio: 0.25 });
    assert.deepEqual(tracing.batch, {
      scheduleDelayMs: 5000,
      exportTimeoutMs: 30_000,
      maxQueueSize: 100,
      maxExportBatchSize: 100,
    });
    assert.equal(tracing.captureContent, true);
  });

  it('refuses gRPC, a bad URL or sampler, naming the variable', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    assert.throws(
      () => loadConfig({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /OTEL_EXPORTER_OTLP_PROTOCOL grpc/,
    );
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }),
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    assert.throws(
      () => loadConfig({ ...base, OTEL_TRACES_SAMPLER: 'sometimes' }),
      /OTEL_TRACES_SAMPLER must/,
    );
    assert.throws(() => loadConfig({ ...base, OTEL_TRACES_SAMPLER_ARG: '2' }), /OTEL_TRACES_SAMPLER_ARG/);
    assert.throws(() => loadConfig({ ...base, OTEL_BSP_MAX_QUEUE_SIZE: 'many' }), /OTEL_BSP_MAX_QUEUE_SIZE/);
  });

  it('says a header list is malformed without repeating it, since it may hold a key', () => {
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'api-key-without-equals-s3cr3t' }),
      (err: Error) =>
        /OTEL_EXPORTER_OTLP_HEADERS must be a comma-separated list/.test(err.message) &&
        !/s3cr3t/.test(err.message),
    );
  });

  it('gives no tool an OTEL_* variable: the exporter headers may hold a backend key', () => {
    const config = loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k', SHOP_TOKEN: 't' });
    assert.equal(config.toolEnv.OTEL_EXPORTER_OTLP_HEADERS, undefined);
    assert.equal(config.toolEnv.SHOP_TOKEN, 't');
  });
});
