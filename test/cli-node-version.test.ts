// `parley` and `npm start` on a Node older than package.json's engines: one line naming the Node it needs,
// exit 1, instead of the SyntaxError an import fails with. Run for real with the machine's own older Node
// (outside npm scripts `node` is that one here, and on CI machines like this one); skipped, with the
// reason, only where no such Node is installed.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../support/processes.ts';
import { binEntry, cleanEnv, lines, tempDir } from './helpers/process.ts';

const manifest = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8'));
/** `>=22.19` → [22, 19] */
const needed = String(manifest.engines.node).replace('>=', '').split('.').map(Number);

/** PATH's directories without node_modules/.bin, where npm scripts and npx put the Node of the install. */
const pathOutsideProjects = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => dir && !dir.includes('node_modules'));

/** A `node` older than the engines' version, on PATH outside node_modules or in the usual places; or null. */
function olderNode(): { path: string; version: string } | null {
  for (const dir of new Set([...pathOutsideProjects, '/usr/local/bin', '/usr/bin', '/bin'])) {
    const path = join(dir, 'node');
    try {
      accessSync(path, constants.X_OK);
      const version = execFileSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 })
        .trim()
        .slice(1);
      const [major = 0, minor = 0] = version.split('.').map(Number);
      if (major < (needed[0] ?? 0) || (major === needed[0] && minor < (needed[1] ?? 0)))
        return { path, version };
    } catch {
      // Not there, or not a Node that runs: try the next directory.
    }
  }
  return null;
}

const old = olderNode();
const skip = old
  ? false
  : `no Node older than ${needed.join('.')} on PATH (outside node_modules) or in /usr/local/bin, /usr/bin, /bin`;

function run(command: string, args: string[], options: { cwd: string; env: Record<string, string> }) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(command, args, { ...options, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const expectedStart = (version: string) =>
  `Parley needs Node ${needed.join('.')} or later (this is Node ${version}, `;

describe(`on a Node older than ${needed.join('.')}`, { skip, concurrency: 2 }, () => {
  test('bin/parley.js exits 1 with one line naming the Node it needs and how to run it', async (t) => {
    if (!old) return;
    const cwd = await tempDir(t);
    const result = await run(old.path, [binEntry, '--version'], { cwd, env: cleanEnv() });
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stdout, '');
    const [line, ...more] = lines(result.stderr);
    assert.deepEqual(more, [], result.stderr);
    assert.ok(line?.startsWith(expectedStart(old.version)), line);
    assert.ok(line.includes(old.path), 'it names the Node that ran it');
    // The project has its own Node in node_modules: the line says how to use it.
    assert.ok(line.includes(`npm start or npx parley in ${projectRoot.replace(/\/$/, '')}`), line);
    assert.doesNotMatch(result.stderr, /SyntaxError/);
  });

  test('npm start where npm finds only that Node prints the same line, not a SyntaxError', async (t) => {
    if (!old) return;
    // A project without node_modules (an install without dev dependencies, say): npm start runs
    // `node bin/parley.js serve` on the first node of PATH, the old one.
    const root = await tempDir(t);
    await copyFile(join(projectRoot, 'package.json'), join(root, 'package.json'));
    await mkdir(join(root, 'bin'));
    await copyFile(binEntry, join(root, 'bin', 'parley.js'));
    const PATH = [dirname(old.path), ...pathOutsideProjects].join(delimiter);

    const result = await run('npm', ['start'], { cwd: root, env: cleanEnv({ PATH }) });
    assert.notEqual(result.code, 0);
    assert.doesNotMatch(result.stderr, /SyntaxError/);
    const needs = lines(result.stderr).filter((l) => l.startsWith('Parley needs'));
    assert.deepEqual(needs, [`${expectedStart(old.version)}${old.path}); install Node 24.`]);
  });
});
