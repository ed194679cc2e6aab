// The tenant file pool: upload with type sniffing and limits, list filters, read, download, delete.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { useTestApp } from '../../helpers/app.ts';
import { encodeForm, fileForm, tinyPdf, tinyPng } from '../../helpers/multipart.ts';

const uploadLimit = 64 * 1024;
const t = useTestApp({ env: { PARLEY_MAX_UPLOAD_BYTES: String(uploadLimit) } });

async function upload(form: FormData, key = t.apiKey) {
  const { payload, contentType } = await encodeForm(form);
  return t.app.inject({
    method: 'POST',
    url: '/v1/agents/files',
    headers: { 'x-api-key': key, 'content-type': contentType },
    payload,
  });
}

async function uploaded(form: FormData, key = t.apiKey) {
  const res = await upload(form, key);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

describe('POST /v1/agents/files', () => {
  it('stores a PNG with its sniffed type, size, metadata and a clean name', async () => {
    const file = await uploaded(fileForm(tinyPng, '../../etc/photo.png', 'image/png', '{"source":"crm"}'));
    assert.match(file.id, /^file_/);
    assert.equal(file.name, 'photo.png');
    assert.equal(file.size, tinyPng.length);
    assert.equal(file.mime_type, 'image/png');
    assert.deepEqual(file.metadata, { source: 'crm' });
    assert.equal(file.session_id, null);
  });

  it('trusts the bytes over the declared type for an accepted binary format', async () => {
    const file = await uploaded(fileForm(tinyPdf, 'report.bin', 'application/octet-stream'));
    assert.equal(file.mime_type, 'application/pdf');
  });

  it('types text files by declared type, then by extension, defaulting to text/plain', async () => {
    const cases: [string, string, string][] = [
      ['notes.md', 'application/octet-stream', 'text/markdown'],
      ['table.csv', 'application/octet-stream', 'text/csv'],
      ['data.json', 'application/octet-stream', 'application/json'],
      ['readme', 'text/markdown', 'text/markdown'],
      ['plain.bin', 'application/octet-stream', 'text/plain'],
    ];
    for (const [name, declared, expected] of cases) {
      const file = await uploaded(
        fileForm(name.endsWith('.json') ? '{"a":1}' : 'a,b\n1,2\n', name, declared),
      );
      assert.equal(file.mime_type, expected, name);
    }
  });

  it('answers 415 for bytes of a type that is not accepted', async () => {
    const elf = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0x3e, 0]);
    const res = await upload(fileForm(elf, 'tool', 'application/octet-stream'));
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().error.code, 'unsupported_media_type');
    assert.equal(res.json().error.context.detected, 'application/x-elf');
  });

  it('answers 415 when the declared accepted type does not match the bytes', async () => {
    const res = await upload(fileForm('just text', 'fake.png', 'image/png'));
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().error.context.declared, 'image/png');
  });

  it('answers 415 for binary bytes with no known signature and for JSON that does not parse', async () => {
    const garbage = await upload(
      fileForm(Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]), 'x.dat', 'application/octet-stream'),
    );
    assert.equal(garbage.statusCode, 415);
    const json = await upload(fileForm('{not json', 'broken.json', 'application/json'));
    assert.equal(json.statusCode, 415);
  });

  it('answers 413 file_too_large with the limit when the file is over the upload limit', async () => {
    const res = await upload(fileForm(Buffer.alloc(uploadLimit + 1, 'a'), 'big.txt', 'text/plain'));
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().error.code, 'file_too_large');
    assert.equal(res.json().error.context.limit_bytes, uploadLimit);
  });

  it('accepts a file of exactly the upload limit', async () => {
    const file = await uploaded(fileForm(Buffer.alloc(uploadLimit, 'a'), 'exact.txt', 'text/plain'));
    assert.equal(file.size, uploadLimit);
  });

  it('answers 422 at ["body","file"] for a second file part (one file per request)', async () => {
    const form = fileForm('one', 'a.txt', 'text/plain');
    form.append('file', new Blob(['two'], { type: 'text/plain' }), 'b.txt');
    const res = await upload(form);
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail, [
      { loc: ['body', 'file'], msg: 'Send one file per request', type: 'too_long' },
    ]);
  });

  it('answers 422 at ["body","file"] without a file part, and for an empty file', async () => {
    const noFile = new FormData();
    noFile.append('metadata', '{}');
    const missing = await upload(noFile);
    assert.equal(missing.statusCode, 422);
    assert.deepEqual(missing.json().detail[0].loc, ['body', 'file']);
    assert.equal(missing.json().detail[0].type, 'missing');
    const empty = await upload(fileForm('', 'empty.txt', 'text/plain'));
    assert.equal(empty.statusCode, 422);
    assert.deepEqual(empty.json().detail[0].loc, ['body', 'file']);
  });

  it('answers 422 at ["body","metadata"] for metadata that is not a JSON object within limits', async () => {
    for (const [metadata, type] of [
      ['{oops', 'json_invalid'],
      ['[1,2]', 'dict_type'],
      [JSON.stringify({ big: 'x'.repeat(9000) }), 'too_large'],
    ]) {
      const res = await upload(fileForm('hello', 'a.txt', 'text/plain', metadata));
      assert.equal(res.statusCode, 422, metadata.slice(0, 20));
      assert.deepEqual(res.json().detail[0].loc.slice(0, 2), ['body', 'metadata']);
      assert.equal(res.json().detail[0].type, type);
    }
  });

  it('takes a metadata part declared application/json as well as plain text', async () => {
    const form = new FormData();
    form.append('file', new Blob(['hello'], { type: 'text/plain' }), 'a.txt');
    form.append('metadata', new Blob(['{"typed":true}'], { type: 'application/json' }));
    // A Blob part is sent with a filename; re-encode it as a field with a JSON content type.
    const { payload, contentType } = await encodeForm(form);
    const boundary = contentType.split('boundary=')[1] ?? '';
    const asField = payload.toString('latin1').replace(/name="metadata"; filename="blob"/, 'name="metadata"');
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/files',
      headers: { 'x-api-key': t.apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: Buffer.from(asField, 'latin1'),
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().metadata, { typed: true });
  });

  it('refuses a metadata part cut off at the part size limit instead of storing a prefix of it', async () => {
    const res = await upload(fileForm('hello', 'a.txt', 'text/plain', `{}${' '.repeat(70_000)}x`));
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail[0].loc, ['body', 'metadata']);
    assert.equal(res.json().detail[0].type, 'too_large');
  });

  it('cuts a long file name to 255 units between characters, keeping its extension', async () => {
    const file = await uploaded(fileForm('hello', `ab${'😀'.repeat(200)}.txt`, 'text/plain'));
    assert.ok(file.name.length <= 255);
    assert.ok(file.name.endsWith('😀.txt'), file.name.slice(-10));
    const read = await t.app.inject({
      url: `/v1/agents/files/${file.id}`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(read.json().name, file.name);
  });

  it('answers 422 for an unknown part and for a malformed multipart body', async () => {
    const form = fileForm('hello', 'a.txt', 'text/plain');
    form.append('colour', 'blue');
    const extra = await upload(form);
    assert.equal(extra.statusCode, 422);
    assert.deepEqual(extra.json().detail[0].loc, ['body', 'colour']);
    const malformed = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/files',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'multipart/form-data; boundary=zz' },
      payload: '--zz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\ntrunc',
    });
    assert.equal(malformed.statusCode, 422);
    assert.deepEqual(malformed.json().detail[0].loc, ['body']);
  });

  it('answers 415 for a JSON body instead of multipart, before reading it', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/files',
      headers: { 'x-api-key': t.apiKey },
      payload: { file: 'hello' },
    });
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().error.code, 'unsupported_media_type');
  });

  it('answers 401 before looking at the body', async () => {
    const { payload, contentType } = await encodeForm(fileForm('x', 'a.txt', 'text/plain'));
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/files',
      headers: { 'content-type': contentType },
      payload,
    });
    assert.equal(res.statusCode, 401);
  });
});

describe('GET /v1/agents/files', () => {
  let key: string;
  const names = ['Alpha.txt', 'alphabet.md', 'Beta.csv', 'Ärger.txt', '100%_sure.txt'];
  const files: Record<string, { id: string; created_at: string; mime_type: string }> = {};

  before(async () => {
    key = await t.createKey('listing');
    for (const name of names) {
      const body = name.endsWith('.csv') ? 'a,b\n' : 'text';
      files[name] = await uploaded(fileForm(body, name, 'application/octet-stream'), key);
      await new Promise((r) => setTimeout(r, 3));
    }
  });

  const list = async (query: string) => {
    const res = await t.app.inject({ url: `/v1/agents/files?${query}`, headers: { 'x-api-key': key } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { items: { name: string }[]; next_offset: number | null };
  };

  it('lists newest first and pages with next_offset', async () => {
    const page = await list('limit=2');
    assert.deepEqual(
      page.items.map((f) => f.name),
      ['100%_sure.txt', 'Ärger.txt'],
    );
    assert.equal(page.next_offset, 2);
    const last = await list('limit=3&offset=2');
    assert.equal(last.items.length, 3);
    assert.equal(last.next_offset, null);
  });

  it('filters by a case-insensitive name prefix, Unicode included, with % and _ taken literally', async () => {
    assert.deepEqual(
      (await list('name=ALPHA')).items.map((f) => f.name),
      ['alphabet.md', 'Alpha.txt'],
    );
    assert.deepEqual(
      (await list(`name=${encodeURIComponent('ä')}`)).items.map((f) => f.name),
      ['Ärger.txt'],
    );
    assert.deepEqual(
      (await list(`name=${encodeURIComponent('100%_')}`)).items.map((f) => f.name),
      ['100%_sure.txt'],
    );
    assert.deepEqual((await list(`name=${encodeURIComponent('1_0')}`)).items, []);
  });

  it('filters by MIME type and by exclusive creation bounds', async () => {
    assert.deepEqual(
      (await list('mime_type=text/csv')).items.map((f) => f.name),
      ['Beta.csv'],
    );
    const beta = files['Beta.csv'];
    assert.ok(beta);
    const after = await list(`created_after=${encodeURIComponent(beta.created_at)}`);
    assert.deepEqual(
      after.items.map((f) => f.name),
      ['100%_sure.txt', 'Ärger.txt'],
    );
    const before = await list(`created_before=${encodeURIComponent(beta.created_at)}`);
    assert.deepEqual(
      before.items.map((f) => f.name),
      ['alphabet.md', 'Alpha.txt'],
    );
    const offsetForm = new Date(beta.created_at).toISOString().replace('Z', '+00:00');
    assert.equal((await list(`created_after=${encodeURIComponent(offsetForm)}`)).items.length, 2);
  });

  it('answers 422 for a name over 200 characters, a bad date, and a limit out of range', async () => {
    for (const [query, loc] of [
      [`name=${'n'.repeat(201)}`, 'name'],
      ['created_after=yesterday', 'created_after'],
      ['created_before=2026-13-01T00:00:00Z', 'created_before'],
      ['limit=0', 'limit'],
      ['offset=-5', 'offset'],
    ]) {
      const res = await t.app.inject({ url: `/v1/agents/files?${query}`, headers: { 'x-api-key': key } });
      assert.equal(res.statusCode, 422, query);
      assert.deepEqual(res.json().detail[0].loc, ['query', loc]);
    }
  });

  it("never shows another tenant's files", async () => {
    const page = await t.app.inject({
      url: '/v1/agents/files?limit=100',
      headers: { 'x-api-key': t.apiKey },
    });
    const ids = new Set(page.json().items.map((f: { id: string }) => f.id));
    for (const file of Object.values(files)) assert.ok(!ids.has(file.id));
  });
});

describe('GET, download and DELETE of one file', () => {
  it('reads the record and downloads the identical bytes with their type', async () => {
    const file = await uploaded(fileForm(tinyPng, 'pic one ü.png', 'image/png'));
    const read = await t.app.inject({
      url: `/v1/agents/files/${file.id}`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), file);
    const content = await t.app.inject({
      url: `/v1/agents/files/${file.id}/content`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(content.statusCode, 200);
    assert.equal(content.headers['content-type'], 'image/png');
    assert.equal(content.headers['x-content-type-options'], 'nosniff');
    assert.equal(
      content.headers['content-disposition'],
      `attachment; filename*=UTF-8''${encodeURIComponent('pic one ü.png')}`,
    );
    assert.ok(content.rawPayload.equals(tinyPng));
  });

  it('deletes with 204; the record and its bytes are then 404', async () => {
    const file = await uploaded(fileForm('bye', 'bye.txt', 'text/plain'));
    const del = await t.app.inject({
      method: 'DELETE',
      url: `/v1/agents/files/${file.id}`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    for (const url of [`/v1/agents/files/${file.id}`, `/v1/agents/files/${file.id}/content`]) {
      const res = await t.app.inject({ url, headers: { 'x-api-key': t.apiKey } });
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().error.code, 'file_not_found');
    }
    const again = await t.app.inject({
      method: 'DELETE',
      url: `/v1/agents/files/${file.id}`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(again.statusCode, 404);
  });

  it("answers 404 for another tenant's file on read, download and delete", async () => {
    const file = await uploaded(fileForm('secret', 'secret.txt', 'text/plain'));
    const other = await t.createKey('intruder');
    for (const [method, url] of [
      ['GET', `/v1/agents/files/${file.id}`],
      ['GET', `/v1/agents/files/${file.id}/content`],
      ['DELETE', `/v1/agents/files/${file.id}`],
    ] as const) {
      const res = await t.app.inject({ method, url, headers: { 'x-api-key': other } });
      assert.equal(res.statusCode, 404, `${method} ${url}`);
    }
    const still = await t.app.inject({
      url: `/v1/agents/files/${file.id}`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(still.statusCode, 200);
  });
});
