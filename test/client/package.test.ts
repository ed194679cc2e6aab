// @parley/client as a project outside this repository gets it: both packages packed (`npm pack`, which builds
// them), the tarballs installed with npm into a scratch project under the system's temporary directory, a small
// program type-checked against the installed declarations with tsc, then run on Node against a live Parley.
// Nothing installed may reach back into the repository: every import of the packed files stays inside its
// package or names one of its dependencies.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { projectRoot } from '../../support/processes.ts';
import { useApp } from '../helpers/app.ts';
import { cleanEnv, runNode, tempDir } from '../helpers/process.ts';
import { buildSessionApp } from '../helpers/sessions.ts';
import { baseUrl, listen } from './helpers.ts';

const run = promisify(execFile);
const packages = ['schemas', 'client'].map((name) => join(projectRoot, 'packages', name));

// `npm pack` builds each package into its dist/ (prepack); one that was not there before is removed after.
const builtBefore = packages.filter((dir) => existsSync(join(dir, 'dist')));
after(async () => {
  for (const dir of packages) {
    if (!builtBefore.includes(dir)) await rm(join(dir, 'dist'), { recursive: true, force: true });
  }
});

/**
 * npm as a developer runs it, with this Node first on the PATH; without the variables an outer `npm test`
 * gives its scripts about the repository (its prefix, its package), so that nothing is installed there.
 */
async function npm(args: string[], cwd: string): Promise<string> {
  const env = cleanEnv();
  for (const name of Object.keys(env)) {
    if (/^npm_(?!config_)|^npm_config_(local_prefix|prefix|global_prefix|workspaces?|call)$/i.test(name)) {
      delete env[name];
    }
  }
  env.PATH = `${dirname(process.execPath)}${process.platform === 'win32' ? ';' : ':'}${env.PATH ?? ''}`;
  const { stdout } = await run('npm', args, { cwd, env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

const specifiers = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;

/** What an installed package's files import that is neither inside it nor one of its dependencies. */
async function reachesOut(packageDir: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8'));
  const allowed = new Set(Object.keys(manifest.dependencies ?? {}));
  const found: string[] = [];
  for (const file of await filesUnder(packageDir)) {
    const where = relative(packageDir, file);
    if (!/\.(js|d\.ts)$/.test(where) || where.split(sep).includes('node_modules')) continue;
    const text = await readFile(file, 'utf8');
    if (text.includes(projectRoot)) found.push(`${where} names the repository's path`);
    for (const [, spec = ''] of text.matchAll(specifiers)) {
      if (spec.startsWith('.')) {
        const target = resolve(dirname(file), spec);
        if (!target.startsWith(packageDir + sep)) found.push(`${where} imports ${spec}`);
      } else if (!spec.startsWith('node:')) {
        const name = spec
          .split('/')
          .slice(0, spec.startsWith('@') ? 2 : 1)
          .join('/');
        if (!allowed.has(name)) found.push(`${where} imports ${spec}, not a dependency`);
      }
    }
  }
  return found;
}

/** The program of an integrator: both families, a plain and a streamed send, and a refusal. */
const program = (base: string, apiKey: string) => `import {
  newIdempotencyKey,
  ParleyClient,
  ParleyConversation,
  ParleyError,
  type SessionTurnEvent,
  type SessionTurnResult,
  type TurnEvent,
} from '@parley/client';

const baseUrl: string = ${JSON.stringify(base)};
const apiKey: string = ${JSON.stringify(apiKey)};

const client = new ParleyClient({ baseUrl, apiKey });
const user = await client.createUser({ reference: 'packed-client' });
const session = await client.createSession('demo', { user: { id: user.id } });
const reply: SessionTurnResult = await client.sendMessage(session.id, 'Hello from the package', {
  idempotencyKey: newIdempotencyKey(),
});
if (reply.status !== 'replied') throw new Error('the demo agent waits for no approval');
const replied = reply.agent_message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

const events: SessionTurnEvent['event'][] = [];
let streamed = '';
for await (const event of client.streamMessage(session.id, 'Streamed through the package')) {
  events.push(event.event);
  if (event.event === 'message.delta') streamed += event.data.delta.text;
}

const started = await client.createConversation('demo');
const conversation = new ParleyConversation({
  baseUrl,
  conversationId: started.conversation.id,
  token: started.session_token,
});
let told = '';
for await (const event of conversation.stream('And through a session token')) {
  const typed: TurnEvent = event;
  if (typed.event === 'message.delta') told += typed.data.delta.text;
}
const refused = await conversation.feedback({ score: 42 }).then(
  () => 'accepted',
  (err: unknown) => (err instanceof ParleyError ? \`\${err.status} \${err.detail?.[0]?.loc.join('.')}\` : String(err)),
);

/** Never called: the declarations are the API's types, not \`any\`. */
export function typed(): void {
  // @ts-expect-error: a message's role is 'user' or 'assistant'
  void client.sendMessage('ses_x', { content: 'hi', role: 'system' });
}

console.log(JSON.stringify({ user: user.reference, replied, events, streamed, told, refused }));
`;

describe('the packed client', { timeout: 300_000 }, () => {
  const t = useApp(() => buildSessionApp(), listen);

  it('installs from its tarballs outside the repository, type-checks a program with tsc and runs it on Node', async (ctx) => {
    const scratch = await tempDir(ctx, 'parley-packed-client-');
    const packed: { filename: string }[] = JSON.parse(
      await npm(
        ['pack', '-w', '@parley/schemas', '-w', '@parley/client', '--pack-destination', scratch, '--json'],
        projectRoot,
      ),
    );
    assert.deepEqual(
      packed.map((p) => p.filename),
      ['parley-schemas-0.1.0.tgz', 'parley-client-0.1.0.tgz'],
    );
    await writeFile(
      join(scratch, 'package.json'),
      JSON.stringify({
        name: 'scratch',
        private: true,
        type: 'module',
        dependencies: Object.fromEntries(
          packed.map((p) => [
            p.filename.startsWith('parley-client') ? '@parley/client' : '@parley/schemas',
            `file:./${p.filename}`,
          ]),
        ),
      }),
    );
    await npm(['install', '--prefer-offline', '--no-audit', '--no-fund'], scratch);

    for (const name of ['client', 'schemas']) {
      assert.deepEqual(
        await reachesOut(join(scratch, 'node_modules', '@parley', name)),
        [],
        `@parley/${name}`,
      );
    }

    // The program's own types only: no @types/node, the DOM's fetch types, the installed packages' declarations
    // checked too (skipLibCheck off). Nothing above the scratch directory has a node_modules to look into.
    await writeFile(join(scratch, 'main.ts'), program(baseUrl(t), t.apiKey));
    await writeFile(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2023',
          lib: ['es2023', 'dom', 'dom.iterable'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        files: ['main.ts'],
      }),
    );
    const tsc = join(projectRoot, 'node_modules', '.bin', 'tsc');
    await run(tsc, ['-p', scratch], { cwd: scratch }).catch((err: { stdout?: string }) => {
      assert.fail(`the program does not type-check against the installed package:\n${err.stdout}`);
    });

    // Node runs the installed JavaScript: type stripping is refused under node_modules.
    const result = await runNode(join(scratch, 'main.ts'), [], { cwd: scratch, timeoutMs: 60_000 });
    assert.equal(result.code, 0, result.stderr);
    const seen = JSON.parse(result.stdout);
    assert.equal(seen.user, 'packed-client');
    assert.match(seen.replied, /Hello from the package/);
    assert.equal(seen.events[0], 'turn.started');
    assert.equal(seen.events.at(-1), 'turn.completed');
    assert.ok(seen.events.includes('message.completed'), seen.events.join(' '));
    assert.match(seen.streamed, /Streamed through the package/);
    assert.match(seen.told, /And through a session token/);
    assert.equal(seen.refused, '422 body.score');
  });
});
