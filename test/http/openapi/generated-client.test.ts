// The served /openapi.json as an integrator generates a client from it: openapi-typescript's types (its default
// options) with openapi-fetch, type-checked by tsc and run against the real server, with no casts. A field with
// a default may be left out of a request (`role`, `persist`), and headers are written as HTTP spells them
// (`Idempotency-Key`), as the README's quick start does.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { baseUrl, listen } from '../../client/helpers.ts';
import { useApp } from '../../helpers/app.ts';
import { buildSessionApp, createSession } from '../../helpers/sessions.ts';

const root = new URL('../../../', import.meta.url);
const t = useApp(() => buildSessionApp(), listen);

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
const sendSource = `import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

export async function main(baseUrl: string, key: string, sessionId: string): Promise<string> {
  const client = createClient<paths>({ baseUrl, headers: { 'x-api-key': key } });
  const { data, error, response } = await client.POST('/v1/agents/sessions/{session_id}/messages', {
    params: { path: { session_id: sessionId }, header: { 'Idempotency-Key': 'generated-1' } },
    body: { role: 'user', content: [{ type: 'text', text: 'Hello from a generated client' }] },
  });
  // An error is the envelope, or a 422's list of issues.
  if (error) throw new Error('detail' in error ? error.detail[0]?.msg : error.error.code);
  const requestId: string | null = response.headers.get('x-request-id');
  const texts: string[] = [];
  // 202: the turn waits for decisions on its tool calls, and has no reply yet.
  if ('turn' in data) return \`\${requestId} awaiting \${data.turn.id}\`;
  // 201 without a reply: people handle the session, and the message is stored for them.
  if ('handled_by' in data) return \`\${requestId} stored for people\`;
  for (const block of data.agent_message.content) if (block.type === 'text') texts.push(block.text);
  return \`\${requestId} \${texts.join('')}\`;
}
`;

/** The quick start's calls, as an integrator writes them with the generated types: only what each one needs. */
const quickStartSource = `import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

type Failure = { error: { code: string } } | { detail: { msg: string }[] };
const failed = (error: Failure) => new Error('detail' in error ? error.detail[0]?.msg : error.error.code);

export async function quickStart(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { 'X-API-Key': key } });

  const user = await client.POST('/v1/agents/users', {
    body: { reference: 'crm-42', name: 'Ada', email: 'ada@example.com' },
  });
  if (user.error) throw failed(user.error);

  const session = await client.POST('/v1/agents/{agent_id}/sessions', {
    params: { path: { agent_id: 'demo' } },
    body: { user: { reference: 'crm-42' }, context: { plan: 'pro' } },
  });
  if (session.error) throw failed(session.error);

  // No role (it defaults to user); the key as HTTP spells it.
  const sent = await client.POST('/v1/agents/sessions/{session_id}/messages', {
    params: { path: { session_id: session.data.id }, header: { 'Idempotency-Key': '7f3c' } },
    body: { content: 'Hello!' },
  });
  if (sent.error) throw failed(sent.error);

  // The generated type of a binary part is its text; the serializer sends it as a file.
  const file = await client.POST('/v1/agents/files', {
    body: { file: 'Order A-1042: shipped on 3 March\\n' },
    bodySerializer: (body) => {
      const form = new FormData();
      form.append('file', new Blob([body.file], { type: 'text/plain' }), 'order.txt');
      return form;
    },
  });
  if (file.error) throw failed(file.error);

  // No persist (it defaults to true), no role in the message.
  const run = await client.POST('/v1/agents/{agent_id}/run', {
    params: { path: { agent_id: 'demo' } },
    body: {
      user: { reference: 'crm-42' },
      context: { channel: 'email' },
      messages: [{ content: [{ type: 'text', text: 'Where is my order?' }, { type: 'file', file_id: file.data.id }] }],
    },
  });
  if (run.error) throw failed(run.error);

  // A turn that waits for decisions (202) has no reply yet: its agent_message is null.
  const text = (message: { content: { type: string; text?: string }[] } | null) =>
    message?.content.map((block) => block.text ?? '').join('') ?? '';
  return {
    user: user.data.reference,
    sessionUser: session.data.user?.id === user.data.id,
    sent: text(sent.data.agent_message),
    file: [file.data.name, file.data.mime_type, file.data.size],
    ran: run.data.session_id !== session.data.id && text(run.data.agent_message),
  };
}
`;

/** Inside the repository (.tmp/ is ignored by git) so that 'openapi-fetch' resolves from node_modules. */
let dir = '';

before(async () => {
  await mkdir(new URL('.tmp/', root), { recursive: true });
  dir = await mkdtemp(join(new URL('.tmp/', root).pathname, 'openapi-client-'));
});
after(() => rm(dir, { recursive: true, force: true }));

/** Generates the types from the served document, writes `source` beside them and type-checks it with tsc. */
async function generatedClient<M>(name: string, source: string): Promise<M> {
  const generator = openapiTypescript();
  const served = await (await fetch(`${baseUrl(t)}/openapi.json`)).json();
  await writeFile(join(dir, 'api.ts'), generator.astToString(await generator.default(served)));
  await writeFile(join(dir, `${name}.ts`), source);
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
      files: [`${name}.ts`],
    }),
  );
  const tsc = new URL('node_modules/.bin/tsc', root).pathname;
  await promisify(execFile)(tsc, ['--noEmit', '-p', dir]).catch((err: { stdout?: string }) => {
    assert.fail(`the generated client does not type-check:\n${err.stdout}`);
  });
  // The same file runs (Node strips its types) against the real server.
  return import(pathToFileURL(join(dir, `${name}.ts`)).href);
}

describe('a client generated from the OpenAPI document', () => {
  it('gives openapi-typescript types with which a send-message call type-checks and runs without casts', async () => {
    const client = await generatedClient<{
      main: (base: string, key: string, id: string) => Promise<string>;
    }>('client', sendSource);
    const session = await createSession(t);
    const text = await client.main(baseUrl(t), t.apiKey, session.id);
    assert.match(text, /^req_\S+ Hello! You said: "Hello from a generated client"/);
  });

  it("runs the quick start's calls without casts: a user, a session, a send with Idempotency-Key and no role, an upload, a run on it without persist", async () => {
    const client = await generatedClient<{
      quickStart: (base: string, key: string) => Promise<Record<string, unknown>>;
    }>('quick-start', quickStartSource);
    const seen = await client.quickStart(baseUrl(t), t.apiKey);
    assert.deepEqual(seen, {
      user: 'crm-42',
      sessionUser: true,
      sent: seen.sent,
      file: ['order.txt', 'text/plain', 33],
      ran: seen.ran,
    });
    assert.match(String(seen.sent), /^Hello Ada! You said: "Hello!"\. Context: plan: "pro"/);
    assert.match(
      String(seen.ran),
      /You said: "Where is my order\?"\. Context: channel: "email"\. Attachments: 1/,
    );
  });
});
