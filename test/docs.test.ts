// The README is part of the contract: its error table lists every catalogue code and its layout map every source file.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { errorCatalogue } from '../src/errors.ts';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('README', () => {
  it('lists every error code with its status and name', () => {
    for (const [code, spec] of Object.entries(errorCatalogue)) {
      const row = new RegExp(`^\\| ${spec.status} \\| \`${code}\` \\| ${spec.name} \\|`, 'm');
      assert.match(readme, row, `README error table lacks ${code}`);
    }
  });

  it('lists no error code that the catalogue lacks', () => {
    const listed = [...readme.matchAll(/^\| \d{3} \| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    for (const code of listed) assert.ok(code && code in errorCatalogue, `README lists unknown code ${code}`);
  });

  it('names every source file in its layout map', () => {
    const layout = readme.slice(readme.indexOf('## Layout'));
    for (const file of sourceFiles(join(root, 'src'))) {
      const rel = relative(join(root, 'src'), file);
      const name = rel.split('/').pop() ?? rel;
      assert.ok(layout.includes(rel) || layout.includes(` ${name} `), `layout map lacks src/${rel}`);
    }
  });

  it('keeps the two set-up commands', () => {
    assert.match(readme, /^npm install && npm start$/m);
    assert.match(readme, /^npm test$/m);
  });
});
