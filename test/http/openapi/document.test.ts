// The served /openapi.json as an integrator's tools read it: Redocly's linter finds no error or warning, and
// every operation is described and every JSON body shown by an example that its schema accepts (a client
// generated from it: generated-client.test.ts).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { lintFromString, loadConfig } from '@redocly/openapi-core';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { errorCatalogue } from '../../../src/errors.ts';
import { operationDocs } from '../../../src/http/openapi/operations.ts';
import { baseUrl, listen } from '../../client/helpers.ts';
import { useApp } from '../../helpers/app.ts';
import { isPlainObject } from '../../helpers/fuzz/send.ts';
import { buildSessionApp } from '../../helpers/sessions.ts';

const root = new URL('../../../', import.meta.url);
const t = useApp(() => buildSessionApp(), listen);

async function servedDocument(): Promise<string> {
  const response = await fetch(`${baseUrl(t)}/openapi.json`);
  assert.equal(response.status, 200);
  return response.text();
}

interface Media {
  schema?: { $ref?: string; examples?: unknown[] };
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}

interface Doc {
  servers: { url: string }[];
  paths: Record<
    string,
    Record<
      string,
      {
        operationId?: string;
        description?: string;
        security?: unknown[];
        requestBody?: { content: Record<string, Media> };
        responses: Record<
          string,
          { description: string; headers?: Record<string, unknown>; content?: Record<string, Media> }
        >;
      }
    >
  >;
  components: { schemas: Record<string, { examples?: unknown[]; [keyword: string]: unknown }> };
}

const operationsOf = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({
      key: `${method.toUpperCase()} ${path}`,
      method,
      path,
      op,
    })),
  );

const pointerSegment = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Checks values against the schema at a JSON pointer into `source` (the served document), with ajv. */
function validatorOf(source: string): (pointer: string, value: unknown) => string | null {
  const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
  // ajv-formats is CommonJS whose types give an ES import no call signature; require() sees the function.
  const addFormats: typeof import('ajv-formats').default = createRequire(import.meta.url)('ajv-formats');
  addFormats(ajv);
  ajv.addSchema(JSON.parse(source), 'openapi.json');
  return (pointer, value) => {
    const validate = ajv.getSchema(`openapi.json#${pointer}`);
    assert.ok(validate, `no schema at ${pointer}`);
    return validate(value) ? null : ajv.errorsText(validate.errors);
  };
}

/** A media type's examples: its own, else its schema's (a component's `examples`, as /docs shows them). */
function examplesOf(media: Media, doc: Doc): unknown[] {
  if ('example' in media) return [media.example];
  if (media.examples) return Object.values(media.examples).map((e) => e.value);
  const name = media.schema?.$ref?.split('/').pop();
  return (name ? doc.components.schemas[name]?.examples : media.schema?.examples) ?? [];
}

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

  it('describes what every operation does, in a few sentences of its own', async () => {
    const doc: Doc = JSON.parse(await servedDocument());
    const descriptions = operationsOf(doc).map(({ key, op }) => {
      assert.equal(typeof op.description, 'string', `${key} has no description`);
      const description = String(op.description);
      assert.match(description, /^[A-Z`].*[.)]$/s, `${key}: ${description}`);
      assert.equal(
        description,
        operationDocs[key]?.description,
        `${key} is not described by its operationDocs entry`,
      );
      return description;
    });
    assert.equal(new Set(descriptions).size, descriptions.length, 'two operations share a description');
  });

  it('shows an example of every JSON request body and JSON success answer, which its schema accepts', async () => {
    const source = await servedDocument();
    const doc: Doc = JSON.parse(source);
    const check = validatorOf(source);
    let bodies = 0;
    let answers = 0;
    for (const { key, method, path, op } of operationsOf(doc)) {
      const at = `/paths/${pointerSegment(path)}/${method}`;
      const shown: [string, Media][] = [];
      const body = op.requestBody?.content['application/json'];
      if (body) shown.push([`${at}/requestBody/content/application~1json`, body]);
      for (const [status, response] of Object.entries(op.responses)) {
        const answer = response.content?.['application/json'];
        if (/^2/.test(status) && answer)
          shown.push([`${at}/responses/${status}/content/application~1json`, answer]);
      }
      for (const [pointer, media] of shown) {
        const examples = examplesOf(media, doc);
        assert.ok(examples.length > 0, `${key}: no example at ${pointer}`);
        for (const example of examples) {
          const refused = check(`${pointer}/schema`, example);
          assert.equal(refused, null, `${key}: the example at ${pointer} does not validate: ${refused}`);
        }
        if (pointer.includes('/requestBody/')) bodies++;
        else answers++;
      }
    }
    // The 16 JSON bodies the service takes and its 31 JSON success answers, at least, were seen.
    assert.ok(bodies >= 16 && answers >= 31, `${bodies} bodies and ${answers} answers`);
  });

  it("keeps each component's examples valid against the component", async () => {
    const source = await servedDocument();
    const doc: Doc = JSON.parse(source);
    const check = validatorOf(source);
    const named = Object.entries(doc.components.schemas).filter(([, schema]) => schema.examples);
    assert.ok(named.length >= 20, `only ${named.length} components have examples`);
    for (const [name, schema] of named) {
      for (const example of schema.examples ?? []) {
        const refused = check(`/components/schemas/${name}`, example);
        assert.equal(refused, null, `the example of ${name} does not validate: ${refused}`);
      }
    }
  });

  it('writes the ids and instants of its examples as the service does', async () => {
    const strings: string[] = [];
    JSON.parse(await servedDocument(), (key, value) => {
      if (key !== 'example' && key !== 'examples' && key !== 'value') return value;
      JSON.stringify(value, (_k, v) => {
        if (typeof v === 'string') strings.push(v);
        return v;
      });
      return value;
    });
    const ids = strings.filter((v) => /^(usr|file|ses|msg|turn|fb|wh|whd|evt|call|key|tok)_/.test(v));
    const instants = strings.filter((v) => /^\d{4}-\d\d-\d\dT/.test(v));
    assert.ok(ids.length > 10 && instants.length > 10, `${ids.length} ids, ${instants.length} instants`);
    for (const id of ids) assert.match(id, /^[a-z]+_[0-9A-Za-z]{21}$/);
    for (const instant of instants) assert.match(instant, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('needs no credential for /healthz, /readyz and /metrics, and one everywhere else', async () => {
    const doc: Doc = JSON.parse(await servedDocument());
    for (const { key, op } of operationsOf(doc)) {
      const open = ['GET /healthz', 'GET /readyz', 'GET /metrics'].includes(key);
      // The Open Responses and Conversations routes take the API key either way (X-API-Key or Authorization: Bearer).
      const ways = /^\w+ \/v1\/(responses|conversations)/.test(key) ? 2 : 1;
      assert.deepEqual(op.security?.length, open ? 0 : ways, key);
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
      'tool.approval_requested',
      'turn.awaiting_approval',
      'message.completed',
      'turn.completed',
      'turn.cancelled',
      'turn.failed',
      'message.created',
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
});
