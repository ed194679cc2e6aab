// Property-based check that the service answers as its OpenAPI document says: fuzzed requests (fast-check,
// the generators of test/helpers/fuzz) to every route of both families, each answer's status documented for
// its operation, its body valid against that status's schema (ajv, JSON Schema 2020-12), its error code one
// the status's description lists, and the headers the document marks required present.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { contentBlockDocumented, contentBlockInput } from '#schemas';
import { fixture, useFuzzApp } from '../../helpers/fuzz/fixture.ts';
import { anyPublicRequest } from '../../helpers/fuzz/public-routes.ts';
import { anyRequest } from '../../helpers/fuzz/routes.ts';
import { clip, type FuzzRequest, fuzz, isPlainObject, summarise } from '../../helpers/fuzz/send.ts';
import { parseSse } from '../../helpers/sse.ts';

const t = useFuzzApp();

interface Response {
  description: string;
  headers?: Record<string, { $ref?: string; required?: boolean }>;
  content?: Record<string, { schema?: unknown }>;
}
interface Operation {
  method: string;
  path: string;
  pattern: RegExp;
  pointer: string;
  responses: Record<string, Response>;
}

let operations: Operation[] = [];
let doc: { components: { headers: Record<string, { required?: boolean }> } };
const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
// ajv-formats is CommonJS whose types give an ES import no call signature; require() sees the function.
const addFormats: typeof import('ajv-formats').default = createRequire(import.meta.url)('ajv-formats');
addFormats(ajv);

const pointerSegment = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Reads the served document; in the tests, as the app is built in the fixture's before() hook. */
async function loadDocument(): Promise<void> {
  if (operations.length > 0) return;
  const res = await t.app.inject({ url: '/openapi.json' });
  doc = res.json();
  ajv.addSchema(res.json(), 'openapi.json');
  const paths: Record<string, Record<string, { responses: Record<string, Response> }>> = res.json().paths;
  operations = Object.entries(paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      // Literal segments win over parameters, as in the router (/v1/agents/users before /v1/agents/{agent_id}/…).
      pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      pointer: `openapi.json#/paths/${pointerSegment(path)}/${method}`,
      responses: op.responses,
    })),
  );
}

/** The operation a request reaches, or undefined (no route: its 404 is the router's). */
function operationOf(req: FuzzRequest): Operation | undefined {
  const pathname = req.url.split('?')[0] ?? '';
  const hits = operations.filter((op) => op.method === req.method && op.pattern.test(pathname));
  // The most literal template wins: fewer parameters.
  return hits.sort((a, b) => a.path.split('{').length - b.path.split('{').length)[0];
}

/** The codes a status's description lists (`- \`code\`: message` lines). */
const listedCodes = (response: Response) =>
  [...response.description.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);

function checkAgainstDocument(req: FuzzRequest, res: LightMyRequestResponse): void {
  const op = operationOf(req);
  // No route took the request (an id the router cannot match, as `\`): the router's 404 `not_found`,
  // an envelope as send.ts checks, belongs to no operation.
  if (!op || (res.statusCode === 404 && res.json().error?.code === 'not_found')) return;
  const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body, 400)}`;
  const status = String(res.statusCode);
  const key = op.responses[status] ? status : 'default';
  const response = op.responses[key];
  assert.ok(response, `status ${status} is not documented for ${op.method} ${op.path}: ${where}`);
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const required = header.required ?? doc.components.headers[name]?.required ?? false;
    if (required) assert.ok(res.headers[name.toLowerCase()], `no ${name} header: ${where}`);
  }
  if (res.statusCode === 204 || req.method === 'HEAD') return;
  const contentType = String(res.headers['content-type'] ?? '').split(';')[0] ?? '';
  const content = response.content ?? {};
  const media = content[contentType] ? contentType : content['*/*'] ? '*/*' : undefined;
  assert.ok(media, `content type ${contentType} is not documented (${Object.keys(content)}): ${where}`);
  if (media !== 'application/json') return;
  const validate = ajv.getSchema(
    `${op.pointer}/responses/${pointerSegment(key)}/content/${pointerSegment(media)}/schema`,
  );
  assert.ok(validate, `no schema for ${op.method} ${op.path} ${key}`);
  const body: unknown = JSON.parse(res.body);
  assert.ok(validate(body), `body does not match the document: ${ajv.errorsText(validate.errors)}: ${where}`);
  if (key !== '422' && res.statusCode >= 400 && isPlainObject(body)) {
    const error = body.error;
    const code = isPlainObject(error) ? error.code : undefined;
    assert.ok(
      listedCodes(response).includes(String(code)),
      `${code} is not among the codes documented for ${op.method} ${op.path} ${status}: ${where}`,
    );
  }
}

describe('answers as the OpenAPI document says', () => {
  it('answers fuzzed requests to the server-side family with documented statuses, bodies, codes and headers', async () => {
    await loadDocument();
    await fuzz(anyRequest, checkAgainstDocument, [], 300);
  });

  it('answers fuzzed requests to the public family with documented statuses, bodies, codes and headers', async () => {
    await loadDocument();
    await fuzz(anyPublicRequest, checkAgainstDocument, [], 300);
  });

  it("streams events that each match the document's TurnEvent (one component per event)", async () => {
    await loadDocument();
    const validate = ajv.getSchema('openapi.json#/components/schemas/TurnEvent');
    assert.ok(validate);
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/agents/sessions/${fixture.sessionId}/messages/stream`,
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      payload: { content: 'Hello, stream' },
    });
    assert.equal(res.statusCode, 200);
    const { events } = parseSse(res.body);
    assert.deepEqual(
      [...new Set(events.map((e) => e.event))],
      ['turn.started', 'message.delta', 'message.completed', 'turn.completed'],
    );
    for (const event of events) {
      assert.ok(validate(event), `${event.event}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('documents content blocks as a union that accepts exactly the blocks the server accepts', () => {
    const value = fc.oneof(
      fc.constantFrom('text', 'image', 'file', 'video', ''),
      fc.string({ maxLength: 3 }),
      fc.constant(null),
    );
    const block = fc.record({ type: value, text: value, file_id: value, other: value }, { requiredKeys: [] });
    fc.assert(
      fc.property(block, (b) => {
        assert.equal(
          contentBlockDocumented.safeParse(b).success,
          contentBlockInput.safeParse(b).success,
          JSON.stringify(b),
        );
      }),
      { numRuns: 1000 },
    );
  });
});
