// The layers of src/, written down as data, and every import of src/**/*.ts checked against them: a place (a
// folder of src/, or a file directly in it) imports its own files and the places below it, never a place beside
// or above it; and no files of src/ import one another in a circle. Type-only imports count: they tie the code
// together as much as any.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';

const SRC = resolve(import.meta.dirname, '../src');

/** From the top down: a place may import the places of any later row, not those of its own row or above. */
const LAYERS: readonly (readonly string[])[] = [
  ['cli.ts'], // `parley serve` starts the server
  ['cli-commands.ts'], // what each command does
  ['server.ts'], // the process: signals, graceful close
  ['app.ts'], // the one place choosing implementations
  ['http'],
  ['actors'],
  ['tools'],
  ['agents'],
  ['webhooks', 'cluster', 'auth'],
  ['store'],
  ['startup.ts'],
  ['config.ts'], // the one reader of process.env
  ['tracing'], // spans; the OpenTelemetry SDK only when configured
  // Leaves: machines are pure, the rest are helpers every layer may use.
  [
    'machines',
    'files',
    'outbound',
    'errors.ts',
    'ids.ts',
    'version.ts',
    'main-module.ts',
    'resident-bytes.ts',
    'shards.ts',
    'hosts.ts',
  ],
];

/** The folders of src/http the same way: the families and open routes use turns/, which uses auth/ and server/. */
const HTTP_LAYERS: readonly (readonly string[])[] = [
  ['api', 'public', 'responses', 'open', 'openapi'],
  ['turns'],
  ['auth'],
  ['server'],
];

/** Files kept beside what they serve that import nothing of src/, so any place may read them (config.ts does). */
const LEAF_FILES = ['webhooks/retry-schedule.ts'];

/** Comments and strings, so that an import is read only where it is code. */
const LEXEMES = /\/\/[^\n]*|\/\*[\s\S]*?\*\/|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`/g;
/** `import … from '…'`, `export … from '…'`, `import '…'` and `import('…')`, once comments are blanked. */
const IMPORT =
  /\b(?:import|export)\b[^;'"`()]*?\bfrom\s*(['"])([^'"]+)\1|\bimport\s*(['"])([^'"]+)\3|\bimport\s*\(\s*(['"])([^'"]+)\5\s*\)/g;

/** Every .ts file of src/, as a path from src/ with forward slashes. */
const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.split('\\').join('/'))
  .sort();

/** The files of src/ each file imports (relative imports that stay in src/; packages are not layers). */
const imports = new Map<string, string[]>(
  files.map((file) => {
    const code = readFileSync(join(SRC, file), 'utf8').replace(LEXEMES, (s) => (s.startsWith('/') ? ' ' : s));
    const targets: string[] = [];
    for (const m of code.matchAll(IMPORT)) {
      const spec = m[2] ?? m[4] ?? m[6];
      if (!spec.startsWith('.')) continue;
      const target = relative(SRC, resolve(SRC, dirname(file), spec))
        .split('\\')
        .join('/');
      if (!target.startsWith('..')) targets.push(target);
    }
    return [file, targets];
  }),
);

const placeOf = (file: string) => file.split('/')[0];
const rankOf = (file: string) => LAYERS.findIndex((row) => row.includes(placeOf(file)));
/** A file's folder inside src/http ('' for another file). */
const httpPlaceOf = (file: string) => (file.startsWith('http/') ? (file.split('/')[1] ?? '') : '');
const httpRankOf = (file: string) => HTTP_LAYERS.findIndex((row) => row.includes(httpPlaceOf(file)));
const edges = [...imports].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));

/** The import circles of src/: its strongly connected files (Tarjan), each sorted. */
function cycles(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file) as number);
    stack.push(file);
    for (const next of imports.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file) as number, low.get(next) as number));
      } else if (stack.includes(next)) {
        low.set(file, Math.min(low.get(file) as number, index.get(next) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (imports.get(file) ?? []).includes(file)) found.push(component.sort());
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return found;
}

describe('the layers of src/', () => {
  test('every folder and file directly in src/ has one place in the layers, and each place named exists', () => {
    const places = [...new Set(files.map(placeOf))];
    assert.deepEqual(
      places.filter((place) => LAYERS.filter((row) => row.includes(place)).length !== 1),
      [],
    );
    assert.deepEqual(
      LAYERS.flat().filter((place) => !places.includes(place)),
      [],
    );
  });

  test('every import of a file of src/ names a file that exists', () => {
    assert.deepEqual(
      edges.filter(({ to }) => !existsSync(join(SRC, to))),
      [],
    );
  });

  test('no import runs up the layers or across a row', () => {
    const upward = edges.filter(
      ({ from, to }) =>
        placeOf(from) !== placeOf(to) && !LEAF_FILES.includes(to) && rankOf(to) <= rankOf(from),
    );
    assert.deepEqual(upward, []);
  });

  test('every file of src/http is in one of its folders, each named in its layers', () => {
    const places = [...new Set(files.filter((f) => f.startsWith('http/')).map(httpPlaceOf))];
    assert.deepEqual(places.sort(), HTTP_LAYERS.flat().sort());
  });

  test('no import inside src/http runs up its layers or across a row', () => {
    const upward = edges.filter(
      ({ from, to }) =>
        httpPlaceOf(from) !== '' &&
        httpPlaceOf(to) !== '' &&
        httpPlaceOf(from) !== httpPlaceOf(to) &&
        httpRankOf(to) <= httpRankOf(from),
    );
    assert.deepEqual(upward, []);
  });

  test('the files beside their folder that any place may read import nothing of src/', () => {
    assert.deepEqual(
      LEAF_FILES.map((file) => ({ file, imports: imports.get(file) })),
      LEAF_FILES.map((file) => ({ file, imports: [] })),
    );
  });

  test('no files of src/ import one another in a circle', () => {
    assert.deepEqual(cycles(), []);
  });
});
