// Request validation with zod, answered in FastAPI's 422 shape: `{ detail: [{ loc, msg, type }] }`,
// with `loc` starting at body, query, path or header, and snake_case `type`s a client can branch on.
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import type { ZodType, z } from 'zod';
import { MAX_NUL_PATHS, NUL_MESSAGE, NUL_TYPE, nulPaths } from '#schemas';
import { ValidationError, type ValidationIssue } from '../../errors.ts';

const locRoot: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

type Issue = z.core.$ZodIssue;

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let current = data;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = Reflect.get(current, key);
  }
  return current;
}

function typeOf(issue: Issue, data: unknown, root: string): { type: string; msg?: string } {
  switch (issue.code) {
    case 'invalid_type': {
      if (valueAt(data, issue.path) === undefined) return { type: 'missing', msg: 'Field required' };
      const textual = root !== 'body';
      switch (issue.expected) {
        case 'int':
        case 'number':
          return textual
            ? { type: 'int_parsing', msg: 'Input should be a valid integer' }
            : { type: issue.expected === 'int' ? 'int_type' : 'float_type' };
        case 'string':
          return { type: 'string_type' };
        case 'boolean':
          return { type: 'bool_type' };
        case 'object':
        case 'record':
          return { type: 'dict_type' };
        case 'array':
          return { type: 'list_type' };
        default:
          return { type: `${issue.expected}_type` };
      }
    }
    case 'too_small':
      if (issue.origin === 'string') return { type: 'string_too_short' };
      if (issue.origin === 'array') return { type: 'too_short' };
      return { type: issue.inclusive ? 'greater_than_equal' : 'greater_than' };
    case 'too_big':
      if (issue.origin === 'string') return { type: 'string_too_long' };
      if (issue.origin === 'array') return { type: 'too_long' };
      return { type: issue.inclusive ? 'less_than_equal' : 'less_than' };
    case 'invalid_format':
      if (issue.format === 'regex') return { type: 'string_pattern_mismatch' };
      if (issue.format === 'datetime') return { type: 'datetime_parsing' };
      return { type: 'value_error' };
    case 'invalid_value':
      if (valueAt(data, issue.path) === undefined) return { type: 'missing', msg: 'Field required' };
      return { type: 'enum' };
    case 'invalid_union':
      if (valueAt(data, issue.path) === undefined) return { type: 'missing', msg: 'Field required' };
      return { type: 'value_error' };
    case 'custom': {
      if (valueAt(data, issue.path) === undefined) return { type: 'missing', msg: 'Field required' };
      const type = issue.params?.type;
      return { type: typeof type === 'string' ? type : 'value_error' };
    }
    default:
      return { type: 'value_error' };
  }
}

/** Maps zod issues for one part of the request (`body`, `querystring`, …) to 422 detail entries. */
export function toValidationIssues(
  issues: readonly Issue[],
  data: unknown,
  httpPart: string,
): ValidationIssue[] {
  const root = locRoot[httpPart] ?? httpPart;
  const detail: ValidationIssue[] = [];
  for (const issue of issues) {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // Report the branch the input was meant for: the one that got past the type check.
      const meant = issue.errors.filter(
        (branch) => !branch.every((i) => i.code === 'invalid_type' && i.path.length === 0),
      );
      if (meant.length === 1 && meant[0]) {
        const prefixed = meant[0].map((i) => ({ ...i, path: [...issue.path, ...i.path] }));
        detail.push(...toValidationIssues(prefixed, data, httpPart));
        continue;
      }
    }
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        detail.push({
          loc: [root, ...path, key],
          msg: 'Extra inputs are not permitted',
          type: 'extra_forbidden',
        });
      }
      continue;
    }
    const { type, msg } = typeOf(issue, data, root);
    detail.push({ loc: [root, ...path], msg: msg ?? issue.message, type });
  }
  return detail;
}

/** Where a string holding U+0000 sits in a value: a key's own location when the key holds it. */
/** 422 detail entries for the strings holding U+0000 in one part of the request. */
export function nulIssues(data: unknown, httpPart: string): ValidationIssue[] {
  const root = locRoot[httpPart] ?? httpPart;
  return nulPaths(data).map((path) => ({ loc: [root, ...path], msg: NUL_MESSAGE, type: NUL_TYPE }));
}

/**
 * Fastify validator compiler for zod schemas. An absent body counts as an empty object, so that
 * `POST …/terminate` with no body and `{}` mean the same (a JSON `null` was refused as it was parsed).
 */
export const validatorCompiler: FastifySchemaCompiler<ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const input = httpPart === 'body' && (data === null || data === undefined) ? {} : data;
    // A JSON body was checked as it was parsed (app.ts); a multipart one's parts are not text.
    if (httpPart !== 'body') {
      const nul = nulIssues(input, httpPart ?? 'body');
      if (nul.length > 0) return { error: new ValidationError(nul) };
    }
    const result = schema.safeParse(input);
    if (result.success) return { value: result.data };
    return { error: new ValidationError(toValidationIssues(result.error.issues, input, httpPart ?? 'body')) };
  };

export const PROTO_KEY_TYPE = 'key_forbidden';

/**
 * The 422 of a JSON body refused only for a `__proto__` key or a `constructor` key holding `prototype`
 * (Fastify's parser refuses them so that no object can be given another prototype): the locations of
 * those keys, or null when `body` is not valid JSON at all.
 */
export function prototypeKeyIssues(body: string): ValidationIssue[] | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  const issues: ValidationIssue[] = [];
  const stack: [unknown, (string | number)[]][] = [[value, ['body']]];
  for (let top = stack.pop(); top !== undefined && issues.length < MAX_NUL_PATHS; top = stack.pop()) {
    const [node, loc] = top;
    if (node === null || typeof node !== 'object') continue;
    for (const [key, child] of Object.entries(node)) {
      const forbidden =
        key === '__proto__' ||
        (key === 'constructor' && child !== null && typeof child === 'object' && 'prototype' in child);
      if (forbidden) {
        issues.push({
          loc: [...loc, key],
          msg: 'Keys named __proto__, or constructor holding prototype, are not accepted',
          type: PROTO_KEY_TYPE,
        });
      } else stack.push([child, [...loc, Array.isArray(node) ? Number(key) : key]]);
    }
  }
  return issues.length > 0 ? issues : null;
}

/**
 * JSON only (multipart where a route takes uploads): any other body type is a 415. An empty JSON body means
 * "no fields"; malformed JSON is a 422 at ["body"].
 */
export function registerJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    const text = typeof body === 'string' ? body : body.toString('utf8');
    parseJson(request, text, (err, value) => {
      if (err) {
        // Valid JSON refused for a prototype key is a 422 at that key, not `json_invalid`.
        const proto = prototypeKeyIssues(text);
        if (proto) return done(new ValidationError(proto), undefined);
        return done(ValidationError.at(['body'], `Invalid JSON: ${err.message}`, 'json_invalid'), undefined);
      }
      // Every JSON body is an object; `null` is not "no fields" (an absent body is), as the document says.
      if (value === null) {
        return done(ValidationError.at(['body'], 'Input should be an object', 'dict_type'), undefined);
      }
      // Text with U+0000 is refused wherever it sits, before any route reads it (PostgreSQL cannot store it).
      const nul = nulIssues(value, 'body');
      if (nul.length > 0) return done(new ValidationError(nul), undefined);
      done(null, value);
    });
  });
}
