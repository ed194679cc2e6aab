// The shared wire schemas' own helpers: the UTF-8 length behind the byte bounds of metadata, context and info.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { metadataSchema, utf8Length } from '#schemas';

describe('utf8Length', () => {
  it('counts what Buffer.byteLength counts, lone surrogates included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => utf8Length(s) === Buffer.byteLength(s)),
      { numRuns: 2000 },
    );
    for (const s of ['', 'é', '€', '😀', '\ud800', '\udc00x', 'a\ud83d']) {
      assert.equal(utf8Length(s), Buffer.byteLength(s), JSON.stringify(s));
    }
  });

  it('bounds metadata by its bytes as JSON, not its characters', () => {
    const fits = { t: 'é'.repeat(4000) };
    const over = { t: '€'.repeat(3000) };
    assert.equal(metadataSchema.safeParse(fits).success, true);
    const result = metadataSchema.safeParse(over);
    assert.equal(result.success, false);
    assert.match(result.error?.issues[0]?.message ?? '', /At most 8192 bytes as JSON \(got 9008\)/);
  });
});
