// Sending a generated request to the fuzzed app and the checks every answer must pass, whatever was sent:
// never a 5xx, an X-Request-Id, and the documented error shapes.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { errorCatalogue } from '../../../src/errors.ts';
import { fill, fuzzApp, RUNS, VALID_KEY } from './fixture.ts';

export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  payload?: string | Buffer;
}

const snakeCase = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const pascalCase = /^[A-Z][A-Za-z0-9]*$/;
const isoTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const tameRequestId = /^[A-Za-z0-9._:-]{1,128}$/;
const locRoots = ['body', 'query', 'path', 'header'];

export function clip(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
}

export function summarise(req: FuzzRequest): string {
  const payload =
    req.payload === undefined
      ? ''
      : ` payload=${JSON.stringify(clip(Buffer.isBuffer(req.payload) ? req.payload.toString('utf8') : req.payload))}`;
  return `${req.method} ${JSON.stringify(clip(req.url))} headers=${clip(JSON.stringify(req.headers), 600)}${payload}`;
}

/** Gives a generated request a short description for fast-check's counterexample report. */
export function described(req: FuzzRequest): FuzzRequest {
  return Object.assign(req, { [fc.toStringMethod]: () => summarise(req) });
}

export function headerValue(req: FuzzRequest, name: string): string | undefined {
  const value = req.headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.map(fill).join(', ') : fill(value);
}

function parseBody(res: LightMyRequestResponse, where: string): unknown {
  assert.match(String(res.headers['content-type']), /^application\/json/, `not JSON: ${where}`);
  try {
    return JSON.parse(res.body);
  } catch {
    assert.fail(`unparsable JSON body: ${where}`);
  }
}

/**
 * The JSON object a request sent, as the server decodes it (UTF-8, a leading BOM dropped). No body, an empty one or
 * a JSON `null` is no fields, as the validator takes them.
 */
export function sentJson(req: FuzzRequest): Record<string, unknown> {
  const text = Buffer.from(fill(String(req.payload ?? '')))
    .toString('utf8')
    .replace(/^\ufeff/, '');
  return text === '' ? {} : (JSON.parse(text) ?? {});
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function checkValidationBody(body: unknown, where: string): void {
  assert.ok(isPlainObject(body), `422 body is not an object: ${where}`);
  assert.deepEqual(Object.keys(body), ['detail'], `422 body must be exactly { detail }: ${where}`);
  const detail = body.detail;
  assert.ok(Array.isArray(detail) && detail.length > 0, `422 detail must be a non-empty array: ${where}`);
  for (const entry of detail) {
    assert.ok(isPlainObject(entry), `422 entry is not an object: ${where}`);
    assert.deepEqual(Object.keys(entry).sort(), ['loc', 'msg', 'type'], `422 entry keys: ${where}`);
    const { loc, msg, type } = entry;
    assert.ok(Array.isArray(loc) && loc.length > 0, `422 loc must be a non-empty array: ${where}`);
    for (const part of loc) {
      assert.ok(
        typeof part === 'string' || (typeof part === 'number' && Number.isInteger(part)),
        `422 loc holds a ${typeof part}: ${where}`,
      );
    }
    assert.ok(locRoots.includes(loc[0]), `422 loc starts with ${JSON.stringify(loc[0])}: ${where}`);
    assert.equal(typeof msg, 'string', `422 msg: ${where}`);
    assert.ok(typeof type === 'string' && snakeCase.test(type), `422 type ${JSON.stringify(type)}: ${where}`);
  }
}

function checkEnvelope(res: LightMyRequestResponse, body: unknown, requestId: string, where: string): void {
  assert.ok(isPlainObject(body), `error body is not an object: ${where}`);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'request_id', 'timestamp'], `envelope keys: ${where}`);
  const { error, request_id, timestamp } = body;
  assert.ok(isPlainObject(error), `error is not an object: ${where}`);
  for (const key of Object.keys(error)) {
    assert.ok(['code', 'name', 'message', 'context'].includes(key), `unexpected error.${key}: ${where}`);
  }
  const { code, name, message, context } = error;
  assert.ok(typeof code === 'string' && snakeCase.test(code), `error.code ${JSON.stringify(code)}: ${where}`);
  assert.ok(Object.hasOwn(errorCatalogue, code), `error.code ${code} is not in the catalogue: ${where}`);
  const spec = errorCatalogue[code as keyof typeof errorCatalogue];
  assert.equal(res.statusCode, spec.status, `status of ${code}: ${where}`);
  assert.ok(
    typeof name === 'string' && pascalCase.test(name),
    `error.name ${JSON.stringify(name)}: ${where}`,
  );
  assert.equal(name, spec.name, `error.name of ${code}: ${where}`);
  assert.equal(typeof message, 'string', `error.message: ${where}`);
  assert.ok(context === undefined || isPlainObject(context), `error.context: ${where}`);
  assert.equal(request_id, requestId, `request_id must equal X-Request-Id: ${where}`);
  assert.ok(
    typeof timestamp === 'string' &&
      isoTimestamp.test(timestamp) &&
      new Date(timestamp).toISOString() === timestamp,
    `timestamp ${JSON.stringify(timestamp)}: ${where}`,
  );
  if (res.statusCode === 429) assert.ok(res.headers['retry-after'], `429 without Retry-After: ${where}`);
}

/** The properties every response must have, whatever was sent. */
function checkResponse(req: FuzzRequest, res: LightMyRequestResponse): void {
  const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body, 500)}`;
  assert.ok(res.statusCode < 500, `5xx answer: ${where}`);
  const requestId = res.headers['x-request-id'];
  assert.ok(typeof requestId === 'string' && requestId !== '', `no X-Request-Id: ${where}`);
  assert.match(requestId, tameRequestId, `X-Request-Id echoes an untamed value: ${where}`);
  const given = headerValue(req, 'x-request-id');
  if (given !== undefined && tameRequestId.test(given)) {
    assert.equal(requestId, given, `a tame X-Request-Id must be kept: ${where}`);
  }
  if (res.statusCode >= 200 && res.statusCode < 300) return;
  if (req.method === 'HEAD') {
    assert.equal(res.body, '', `HEAD answered with a body: ${where}`);
    return;
  }
  const body = parseBody(res, where);
  if (onOpenResponses(fill(req.url))) checkOpenAiEnvelope(body, where);
  else if (res.statusCode === 422) checkValidationBody(body, where);
  else checkEnvelope(res, body, requestId, where);
}

/**
 * Whether a URL lands on the Open Responses routes, which answer every error in OpenAI's envelope; as a client
 * resolves it (`/v1/agents/%2e%2e/conversations` is `/v1/conversations`).
 */
const onOpenResponses = (url: string) => {
  try {
    return /^\/v1\/(responses|conversations)(\/|$)/.test(new URL(url, 'http://parley.test').pathname);
  } catch {
    return false;
  }
};

function checkOpenAiEnvelope(body: unknown, where: string): void {
  assert.ok(isPlainObject(body) && isPlainObject(body.error), `no OpenAI error envelope: ${where}`);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type'], where);
}

export async function send(req: FuzzRequest): Promise<LightMyRequestResponse> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    headers[name] = Array.isArray(value) ? value.map(fill) : fill(value);
  }
  const res = await fuzzApp().app.inject({
    method: req.method as InjectOptions['method'],
    url: fill(req.url),
    headers,
    ...(req.payload === undefined
      ? {}
      : { payload: typeof req.payload === 'string' ? fill(req.payload) : req.payload }),
  });
  checkResponse(req, res);
  return res;
}

/** Runs one fuzzing property over `requests`, each response checked by `send`, plus an optional extra check. */
export async function fuzz(
  requests: fc.Arbitrary<FuzzRequest>,
  extra?: (req: FuzzRequest, res: LightMyRequestResponse) => Promise<void> | void,
  examples: FuzzRequest[] = [],
  numRuns = RUNS,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(requests, async (req) => {
      const res = await send(req);
      await extra?.(req, res);
    }),
    { numRuns, examples: examples.map((req) => [described(req)]), includeErrorInReport: true },
  );
}

export const jsonRequest = (method: string, url: string, payload: string): FuzzRequest =>
  described({
    method,
    url,
    headers: { 'x-api-key': VALID_KEY, 'content-type': 'application/json' },
    payload,
  });
