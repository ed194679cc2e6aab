// Configuration: defaults, parsing, and one clear line naming the variable when a value is bad.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { defaultResidentBytes } from '../src/resident-bytes.ts';

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.dataDir, './data');
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.redisUrl, undefined);
    assert.equal(config.tokenTtlSeconds, 900);
    assert.deepEqual(config.rateLimit, { perApiKey: 1200, perSessionToken: 120 });
    assert.deepEqual(config.limits, { bodyBytes: 1024 * 1024, uploadBytes: 20 * 1024 * 1024 });
    assert.deepEqual(config.corsOrigins, []);
    assert.equal(config.logLevel, 'info');
  });

  it('parses numbers and lists and treats blank values as unset', () => {
    const config = loadConfig({
      PORT: '8080',
      PARLEY_CORS_ORIGINS: 'https://a.example, https://b.example,',
      PARLEY_RATE_LIMIT_KEY: '50',
      DATABASE_URL: '  ',
      PARLEY_TOKEN_SECRET: '',
    });
    assert.equal(config.port, 8080);
    assert.deepEqual(config.corsOrigins, ['https://a.example', 'https://b.example']);
    assert.equal(config.rateLimit.perApiKey, 50);
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.tokenSecret, undefined);
  });

  it('is frozen all the way down', () => {
    const config = loadConfig({});
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.limits));
    assert.throws(() => {
      (config.limits as { bodyBytes: number }).bodyBytes = 1;
    }, TypeError);
  });

  it('requires PARLEY_NODE_URL with REDIS_URL, in one line naming it', () => {
    assert.throws(
      () => loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }),
      (err: unknown) => err instanceof ConfigError && /PARLEY_NODE_URL.*REDIS_URL/.test(err.message),
    );
    const config = loadConfig({
      REDIS_URL: 'redis://127.0.0.1:6379',
      PARLEY_NODE_URL: 'http://127.0.0.1:3007',
    });
    assert.equal(config.nodeUrl, 'http://127.0.0.1:3007');
    assert.equal(config.leaseTtlMs, 10_000);
  });

  it('bounds receiving a request by default and refuses a headers timeout longer than the request timeout', () => {
    assert.deepEqual(loadConfig({}).http, {
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveMs: 72_000,
      maxConnections: 3000,
    });
    assert.throws(
      () => loadConfig({ PARLEY_HEADERS_TIMEOUT_MS: '40000' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /PARLEY_HEADERS_TIMEOUT_MS.*PARLEY_REQUEST_TIMEOUT_MS/.test(err.message),
    );
  });

  it('takes the resident bound from the memory the process may use unless set, and admits turns by it', () => {
    const config = loadConfig({});
    assert.equal(config.actors.maxResidentBytes, defaultResidentBytes());
    assert.ok(config.actors.maxResidentBytes > 0);
    assert.deepEqual(config.admission, { tenantShare: 0.5, maxWaiting: 128, maxWaitMs: 30_000 });
    const set = loadConfig({
      PARLEY_MAX_RESIDENT_BYTES: '536870912',
      PARLEY_TENANT_RESIDENT_PERCENT: '100',
      PARLEY_ADMISSION_QUEUE: '0',
    });
    assert.equal(set.actors.maxResidentBytes, 536_870_912);
    assert.deepEqual(set.admission, { tenantShare: 1, maxWaiting: 0, maxWaitMs: 30_000 });
    assert.equal(
      loadConfig({ PARLEY_MAX_RESIDENT_BYTES: ' ' }).actors.maxResidentBytes,
      defaultResidentBytes(),
    );
    for (const [variable, value] of [
      ['PARLEY_MAX_RESIDENT_BYTES', '1.5'],
      ['PARLEY_MAX_RESIDENT_BYTES', 'lots'],
      ['PARLEY_TENANT_RESIDENT_PERCENT', '0'],
      ['PARLEY_ADMISSION_WAIT_MS', '0'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [variable]: value }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(variable),
      );
    }
  });

  it('allows private webhook targets by default only to one SQLite process listening on loopback', () => {
    const allow = (env: Record<string, string>) => loadConfig(env).webhooks.allowPrivate;
    assert.equal(allow({}), true);
    assert.equal(allow({ HOST: 'localhost' }), true);
    assert.equal(allow({ HOST: '0.0.0.0' }), false);
    assert.equal(allow({ HOST: '::' }), false);
    assert.equal(allow({ HOST: '10.0.0.5' }), false);
    assert.equal(allow({ DATABASE_URL: 'postgres://127.0.0.1/parley' }), false);
    assert.equal(allow({ HOST: '0.0.0.0', PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true' }), true);
    assert.equal(allow({ PARLEY_WEBHOOK_ALLOW_PRIVATE: 'false' }), false);
  });

  it('bounds the demo page by default: conversations and sends an hour, message, history, files, a day', () => {
    const { serve: _serve, ...bounds } = loadConfig({}).demo;
    assert.deepEqual(bounds, {
      conversationsPerHour: 100,
      sendsPerHour: 600,
      maxMessageChars: 2000,
      maxMessages: 40,
      fileBytes: 16 * 1024 * 1024,
      retentionMs: 86_400_000,
    });
  });

  it('refuses a bad value with one line that names the variable', () => {
    const cases: Record<string, string> = {
      PORT: 'eighty',
      PARLEY_TOKEN_SECRET: 'too-short',
      DATABASE_URL: 'mysql://db/x',
      REDIS_URL: 'http://redis',
      LOG_LEVEL: 'loud',
      PARLEY_BOOTSTRAP_API_KEY: 'short',
      PARLEY_MAX_UPLOAD_BYTES: '0',
      PARLEY_LEASE_TTL_MS: '999',
    };
    for (const [name, value] of Object.entries(cases)) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) =>
          err instanceof ConfigError && err.message.includes(name) && !err.message.includes('\n'),
        name,
      );
    }
  });
});
