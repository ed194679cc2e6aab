// The documentation is part of the contract: its error table and configuration table follow the code, every
// relative link and anchor leads somewhere, the README stays short, and the docs speak in the project's own
// words. (The README's quick start is run for real in quick-start.test.ts.)
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { errorCatalogue } from '../src/errors.ts';
import { projectRoot } from '../support/processes.ts';
import { anchors, documentationFiles, linkTargets, readDoc, tableRows } from './helpers/markdown.ts';

const readme = readDoc('README.md');

/** The variables `loadConfig` reads by name, found by handing it an environment that records every read. */
function variablesReadByConfig(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy({} as NodeJS.ProcessEnv, {
    get(_target, name) {
      if (typeof name === 'string') read.add(name);
      return undefined;
    },
  });
  loadConfig(env);
  return read;
}

describe('the error reference', () => {
  const errors = readDoc('docs/reference/errors.md');
  const rows = tableRows(errors, /^\| status \| code \| name \|/);

  it('lists every code of the catalogue with its status and name', () => {
    for (const [code, spec] of Object.entries(errorCatalogue)) {
      const row = rows.find((cells) => cells[1] === `\`${code}\``);
      assert.ok(row, `docs/reference/errors.md lacks ${code}`);
      assert.equal(row[0], String(spec.status), `the status of ${code}`);
      assert.equal(row[2], spec.name, `the name of ${code}`);
    }
  });

  it('lists no code that the catalogue lacks, and each code once', () => {
    const listed = rows.map((cells) => cells[1]?.replaceAll('`', '') ?? '');
    for (const code of listed) assert.ok(code in errorCatalogue, `errors.md lists unknown code ${code}`);
    assert.equal(new Set(listed).size, listed.length, 'a code is listed twice');
  });
});

describe('the configuration reference', () => {
  const rows = tableRows(readDoc('docs/reference/configuration.md'), /^\| variable \| default \| meaning \|/);
  const named = rows.flatMap((cells) => [...(cells[0] ?? '').matchAll(/`([A-Z0-9_*]+)`/g)].map((m) => m[1]));

  it('lists exactly the variables src/config.ts reads', () => {
    const listed = new Set(named.filter((name): name is string => !!name && !name.includes('*')));
    const read = variablesReadByConfig();
    for (const name of read) assert.ok(listed.has(name), `configuration.md lacks ${name}`);
    for (const name of listed)
      assert.ok(read.has(name), `configuration.md lists ${name}, which config.ts ignores`);
  });

  it('has a row for the variables that config.ts picks up by pattern', () => {
    const config = loadConfig({ SOMEONES_API_KEY: 'k', SOMEONES_TOOL_TOKEN: 't' });
    if ('SOMEONES_API_KEY' in config.providerKeys)
      assert.ok(named.includes('*_API_KEY'), 'no `*_API_KEY` row');
    if ('SOMEONES_TOOL_TOKEN' in config.toolEnv) {
      assert.ok(
        rows.some((cells) => cells.join(' ').includes('secret_env')),
        'no row for the variables tools name (secret_env, headers_env)',
      );
    }
  });
});

describe('the documentation files', () => {
  const files = documentationFiles();

  it('include the guides, the reference and the internals', () => {
    for (const dir of ['docs/guides/', 'docs/reference/', 'docs/internals/']) {
      assert.ok(
        files.some((file) => file.startsWith(dir)),
        `nothing under ${dir}`,
      );
    }
    assert.ok(files.includes('docs/README.md'), 'docs/README.md, the index, is missing');
  });

  it('link only to files and anchors that exist', () => {
    const problems: string[] = [];
    for (const file of files) {
      for (const target of linkTargets(readDoc(file))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        const [path = '', anchor] = target.split('#', 2);
        const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
        if (resolved.startsWith('..') || !existsSync(join(projectRoot, resolved))) {
          problems.push(`${file}: ${target} (no ${resolved})`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!resolved.endsWith('.md') || statSync(join(projectRoot, resolved)).isDirectory()) continue;
        if (!anchors(readDoc(resolved)).has(anchor))
          problems.push(`${file}: ${target} (no heading #${anchor})`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('name no section of a design or specification file outside the repository', () => {
    for (const file of files) {
      const text = readDoc(file);
      assert.doesNotMatch(
        text,
        /\bDESIGN\b|\bSPEC\b|SPEC\.md|§/,
        `${file} cites a file outside the repository`,
      );
    }
  });
});

/** The code, tests and scripts whose comments point into docs/ (packages' sources included). */
function codeFiles(): string[] {
  const roots = ['src', 'test', 'bench', 'scripts', 'support', 'bin', 'packages'];
  return roots.flatMap((dir) =>
    readdirSync(join(projectRoot, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|js)$/.test(f) && !/(^|\/)(node_modules|dist)\//.test(f))
      .map((f) => join(dir, f)),
  );
}

describe('the code', () => {
  const files = codeFiles();

  it('points only at docs files and headings that exist', () => {
    const problems: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(projectRoot, file), 'utf8');
      for (const m of text.matchAll(/\bdocs\/[\w./-]+\.md(?:#[\w-]+)?/g)) {
        const [path = '', anchor] = m[0].split('#', 2);
        if (!existsSync(join(projectRoot, path))) problems.push(`${file}: ${m[0]} (no ${path})`);
        else if (anchor !== undefined && !anchors(readDoc(path)).has(anchor))
          problems.push(`${file}: ${m[0]} (no heading #${anchor})`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('cites no section of a design or specification file outside the repository', () => {
    // This file names the pattern it looks for.
    const cites = files.filter(
      (file) =>
        file !== 'test/docs.test.ts' &&
        /\bDESIGN\b|\bSPEC\b|SPEC\.md|§/.test(readFileSync(join(projectRoot, file), 'utf8')),
    );
    assert.deepEqual(cites, []);
  });
});

describe('the README', () => {
  it('is at most 250 lines', () => {
    const lines = readme.trimEnd().split('\n').length;
    assert.ok(lines <= 250, `README.md has ${lines} lines`);
  });

  it('keeps the two set-up commands', () => {
    assert.match(readme, /^npm install && npm start$/m);
    assert.match(readme, /^npm test$/m);
  });
});
