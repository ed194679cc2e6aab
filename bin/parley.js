#!/usr/bin/env node
// The `parley` command (and `npm start`, as `parley serve`). Node strips the TypeScript types itself; the
// compile cache, enabled before the sources load, keeps every start after the first short.
//
// The Node version is checked before anything is imported: static imports are resolved before any code
// runs, and an older Node fails on them (Node 20's `node:module` has no enableCompileCache) with a
// SyntaxError that does not say what is wrong. Everything after the check is a dynamic import.
// 22.19 is package.json's `engines.node` (test/cli.test.ts keeps the two equal).
const needed = [22, 19];
const [major, minor] = process.versions.node.split('.').map(Number);

if (major < needed[0] || (major === needed[0] && minor < needed[1])) {
  const { existsSync } = await import('node:fs');
  const { fileURLToPath } = await import('node:url');
  const projectRoot = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
  const thisNode = `this is Node ${process.versions.node}, ${process.execPath}`;
  // npm scripts and npx put node_modules/.bin first on PATH: the Node that npm install brought runs them.
  const advice = existsSync(`${projectRoot}/node_modules/.bin/node`)
    ? `run it as npm start or npx parley in ${projectRoot}, which use the Node in its node_modules, or install Node 24`
    : 'install Node 24';
  process.stderr.write(`Parley needs Node ${needed.join('.')} or later (${thisNode}); ${advice}.\n`);
  process.exitCode = 1;
} else {
  const { enableCompileCache } = await import('node:module');
  enableCompileCache();
  const { main } = await import('../src/cli.ts');
  process.exitCode = await main(process.argv.slice(2));
}
