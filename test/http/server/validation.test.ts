// The zod → FastAPI 422 mapping: locations and the snake_case types clients branch on.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { toValidationIssues } from '../../../src/http/server/validation.ts';

function issues(schema: z.ZodType, data: unknown, part = 'body') {
  const result = schema.safeParse(data);
  assert.equal(result.success, false);
  return toValidationIssues(result.error?.issues ?? [], data, part);
}

describe('toValidationIssues', () => {
  it('reports a missing field as type missing with "Field required"', () => {
    assert.deepEqual(issues(z.object({ a: z.string() }), {}), [
      { loc: ['body', 'a'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('roots locations at body, query, path and header', () => {
    const schema = z.object({ a: z.string() });
    assert.deepEqual(
      ['body', 'querystring', 'params', 'headers'].map((part) => issues(schema, {}, part)[0]?.loc[0]),
      ['body', 'query', 'path', 'header'],
    );
  });

  it('names type errors, bounds, patterns, enums and extra keys like FastAPI', () => {
    const schema = z.strictObject({
      s: z.string().max(2).optional(),
      n: z.number().int().min(1).optional(),
      l: z.array(z.number()).max(1).optional(),
      p: z.string().regex(/^a+$/).optional(),
      e: z.enum(['x', 'y']).optional(),
      o: z.record(z.string(), z.unknown()).optional(),
    });
    const types = (data: unknown) => issues(schema, data).map((i) => `${i.loc.join('.')}:${i.type}`);
    assert.deepEqual(types({ s: 'abc' }), ['body.s:string_too_long']);
    assert.deepEqual(types({ s: 5 }), ['body.s:string_type']);
    assert.deepEqual(types({ n: 0 }), ['body.n:greater_than_equal']);
    assert.deepEqual(types({ n: 1.5 }), ['body.n:int_type']);
    assert.deepEqual(types({ l: [1, 2] }), ['body.l:too_long']);
    assert.deepEqual(types({ l: ['x'] }), ['body.l.0:float_type']);
    assert.deepEqual(types({ p: 'b' }), ['body.p:string_pattern_mismatch']);
    assert.deepEqual(types({ e: 'z' }), ['body.e:enum']);
    assert.deepEqual(types({ o: [] }), ['body.o:dict_type']);
    assert.deepEqual(types({ zz: 1, yy: 2 }), ['body.zz:extra_forbidden', 'body.yy:extra_forbidden']);
  });

  it('reports unparsable numbers in a query as int_parsing', () => {
    const schema = z.object({ limit: z.coerce.number().int() });
    assert.deepEqual(issues(schema, { limit: 'ten' }, 'querystring')[0], {
      loc: ['query', 'limit'],
      msg: 'Input should be a valid integer',
      type: 'int_parsing',
    });
  });

  it('passes the type of a custom refinement through', () => {
    const schema = z.object({
      a: z.string().refine(() => false, { message: 'nope', params: { type: 'too_deep' } }),
    });
    assert.equal(issues(schema, { a: 'x' })[0]?.type, 'too_deep');
  });
});
