// The served /openapi.json as an integrator's tools read it: Redocly's linter finds no error or warning,
// and types generated from it by openapi-typescript type-check (and run) a send-message call with no casts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { lintFromString, loadConfig } from '@redocly/openapi-core';
import { errorCatalogue } from '../../src/errors.ts';
import { operationDocs } from '../../src/http/openapi-operations.ts';
import { baseUrl, listen } from '../client/helpers.ts';
import { useApp } from '../helpers/app.ts';
import { isPlainObject } from '../helpers/fuzz/send.ts';
import { buildSessionApp, createSession } from '../helpers/sessions.ts';

const root = new URL('../../', import.meta.url);
const t = useApp(() => buildSessionApp(), listen);

async function servedDocument(): Promise<string> {
  const response = await fetch(`${baseUrl(t)}/openapi.json`);
  assert.equal(response.status, 200);
  return response.text();
}

/**
 * openapi-typescript needs TypeScript 5's JS API, which the project's TypeScript 7 (native) lacks, so it lives
 * in the packages/openapi-check workspace with a TypeScript 5 of its own; it is loaded from there.
 */
function openapiTypescript(): {
  default: (schema: unknown) => Promise<unknown>;
  astToString: (ast: unknown) => string;
} {
  const require = createRequire(new URL('packages/openapi-check/package.json', root));
  return require('openapi-typescript');
}

/** An integrator's client: openapi-fetch over the generated types, sending one message. */
const clientSource = `import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

export async function main(baseUrl: string, key: string, sessionId: string): Promise<string> {
  const client = createClient<paths>({ baseUrl, headers: { 'x-api-key': key } });
  const { data, error, response } = await client.POST('/v1/agents/sessions/{session_id}/messages', {
    params: { path: { session_id: sessionId }, header: { 'idempotency-key': 'generated-1' } },
    body: { role: 'user', content: [{ type: 'text', text: 'Hello from a generated client' }] },
  });
  // An error is the envelope, or a 422's list of issues.
  if (error) throw new Error('detail' in error ? error.detail[0]?.msg : error.error.code);
  const requestId: string | null = response.headers.get('x-request-id');
  const texts: string[] = [];
  for (const block of data.agent_message.content) if (block.type === 'text') texts.push(block.text);
  return \`\${requestId} \${texts.join('')}\`;
}
`;

interface Doc {
  servers: { url: string }[];
  paths: Record<
    string,
    Record<
      string,
      {
        operationId?: string;
        security?: unknown[];
        responses: Record<string, { description: string; headers?: Record<string, unknown> }>;
      }
    >
  >;
  components: { schemas: Record<string, unknown> };
}

const operationsOf = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })),
  );

describe('the OpenAPI document', () => {
  it('gives every operation a unique camelCase operationId and every response a description and X-Request-Id', async () => {
    const doc: Doc = JSON.parse(await servedDocument());
    const ids = operationsOf(doc).map(({ op }) => op.operationId);
    assert.equal(new Set(ids).size, ids.length);
    for (const { key, op } of operationsOf(doc)) {
      assert.match(String(op.operationId), /^[a-z][a-zA-Z]+$/, key);
      for (const [status, response] of Object.entries(op.responses)) {
        assert.ok(response.description && response.description !== 'Default Response', `${key} ${status}`);
        assert.ok(response.headers?.['X-Request-Id'], `${key} ${status} without X-Request-Id`);
      }
    }
    assert.equal(doc.paths['/v1/agents/sessions/{session_id}/messages']?.post?.operationId, 'sendMessage');
    assert.deepEqual(doc.servers, [{ url: '/', description: 'The server that serves this document' }]);
  });

  it('needs no credential for /healthz, /readyz and /metrics, and one everywhere else', async () => {
    const doc: Doc = JSON.parse(await servedDocument());
    for (const { key, op } of operationsOf(doc)) {
      const open = ['GET /healthz', 'GET /readyz', 'GET /metrics'].includes(key);
      assert.deepEqual(op.security?.length, open ? 0 : 1, key);
    }
  });

  it("lists under each error status the catalogue's codes of that status the operation declares", async () => {
    const doc: Doc = JSON.parse(await servedDocument());
    const createUser = doc.paths['/v1/agents/users']?.post?.responses;
    assert.equal(
      createUser?.['409']?.description,
      `- \`user_reference_conflict\`: ${errorCatalogue.user_reference_conflict.message}`,
    );
    for (const { key, op } of operationsOf(doc)) {
      const declared = operationDocs[key]?.errors ?? [];
      for (const code of declared) {
        const status = String(errorCatalogue[code].status);
        assert.ok(
          op.responses[status]?.description.includes(`\`${code}\``),
          `${key} ${status} lacks ${code}`,
        );
      }
    }
    const send = doc.paths['/v1/agents/sessions/{session_id}/messages']?.post?.responses;
    assert.ok(send?.['201']?.headers?.['Idempotent-Replayed']);
    assert.ok(send?.['429']?.headers?.['Retry-After']);
    assert.ok(send?.['503']?.headers?.['Retry-After']);
    assert.ok(send?.['201']?.headers?.['RateLimit-Remaining']);
  });

  it("describes a stream's events as one schema each, discriminated on `event`", async () => {
    const doc: Doc = JSON.parse(await servedDocument());
    const union = doc.components.schemas.TurnEvent;
    assert.ok(isPlainObject(union) && isPlainObject(union.discriminator));
    assert.deepEqual(Object.keys(union.discriminator.mapping ?? {}), [
      'turn.started',
      'message.delta',
      'tool.started',
      'tool.completed',
      'message.completed',
      'turn.completed',
      'turn.failed',
    ]);
    assert.ok(doc.components.schemas.TurnFailedEvent);
  });

  it('keeps one schema of each name: no unused *Input twin', async () => {
    const doc: Doc = JSON.parse(await servedDocument());
    const names = Object.keys(doc.components.schemas);
    assert.deepEqual(
      names.filter((n) => n.endsWith('Input')),
      [],
    );
    assert.ok(names.includes('MessageCreate') && names.includes('Message'));
  });

  it('passes Redocly lint with no errors and no warnings', async () => {
    const config = await loadConfig({ configPath: new URL('redocly.yaml', root).pathname });
    const problems = await lintFromString({
      source: await servedDocument(),
      absoluteRef: 'openapi.json',
      config,
    });
    const listed = problems.map(
      (p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`,
    );
    assert.deepEqual(listed, []);
  });

  it('gives openapi-typescript types with which a send-message call type-checks and runs without casts', async () => {
    // Inside the repository (.tmp/ is ignored by git) so that 'openapi-fetch' resolves from node_modules.
    await mkdir(new URL('.tmp/', root), { recursive: true });
    const dir = await mkdtemp(join(new URL('.tmp/', root).pathname, 'openapi-client-'));
    try {
      const generator = openapiTypescript();
      const ast = await generator.default(JSON.parse(await servedDocument()));
      await writeFile(join(dir, 'api.ts'), generator.astToString(ast));
      await writeFile(join(dir, 'client.ts'), clientSource);
      await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'es2023',
            lib: ['es2023'],
            module: 'nodenext',
            moduleResolution: 'nodenext',
            strict: true,
            noEmit: true,
            allowImportingTsExtensions: true,
            verbatimModuleSyntax: true,
            skipLibCheck: true,
            types: ['node'],
          },
          files: ['client.ts'],
        }),
      );
      const tsc = new URL('node_modules/.bin/tsc', root).pathname;
      await promisify(execFile)(tsc, ['--noEmit', '-p', dir]).catch((err: { stdout?: string }) => {
        assert.fail(`the generated client does not type-check:\n${err.stdout}`);
      });

      // The same file runs (Node strips its types) against the real server.
      const session = await createSession(t);
      const client: { main: (base: string, key: string, id: string) => Promise<string> } = await import(
        pathToFileURL(join(dir, 'client.ts')).href
      );
      const text = await client.main(baseUrl(t), t.apiKey, session.id);
      assert.match(text, /^req_\S+ Hello! You said: "Hello from a generated client"/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
