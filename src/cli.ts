// The `parley` command: serve, migrate, and manage tenants and API keys against the configured store. Data
// goes to stdout (tab-separated with a header row, or JSON with --json), notes and errors to stderr.
import { parseArgs } from 'node:util';
import { agentIdSchema } from './agents/agent-id.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from './auth/api-keys.ts';
import { ConfigError, loadConfig } from './config.ts';
import { newId } from './ids.ts';
import { isMainModule } from './main-module.ts';
import { openStore } from './store/open-store.ts';
import type { Store } from './store/store.ts';
import { VERSION } from './version.ts';

const usage = `Usage: parley <command> [--json]

  serve                                     start the service (same as npm start)
  migrate                                   apply pending database migrations
  tenants create <id> [--name NAME]         create a tenant
  tenants list                              list tenants
  keys create --tenant T [--agents a,b|*]   create an API key (printed once) for agents a and b, or all
  keys list [--tenant T]                    list API keys (never the keys themselves)
  keys revoke <key_id>                      revoke an API key

  --json                                    print data as JSON (lists as arrays) instead of text
  --version                                 print the version
`;

class UsageError extends Error {}

const tenantIdPattern = /^[a-z0-9][a-z0-9_-]{0,63}$/;

function parseAgents(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '*') return ['*'];
  const ids = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (ids.length === 0) throw new UsageError('--agents needs "*" or a comma-separated list of agent ids');
  for (const id of ids) {
    const checked = agentIdSchema.safeParse(id);
    if (!checked.success) throw new UsageError(`--agents: "${id}": ${checked.error.issues[0]?.message}`);
  }
  return ids;
}

/** Rows as tab-separated lines under a header row. */
function table(header: string[], rows: string[][]): string[] {
  return [header, ...rows].map((cells) => cells.join('\t'));
}

async function run(
  store: Store,
  command: string[],
  values: { name?: string; tenant?: string; agents?: string; json?: boolean },
) {
  const [group, action, arg] = command;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const note = (line: string) => process.stderr.write(`${line}\n`);
  /** Prints `data` as JSON with --json, else `text`'s lines. */
  const print = (data: unknown, text: () => string[]) => {
    if (values.json) out(JSON.stringify(data, null, 2));
    else for (const line of text()) out(line);
  };

  if (group === 'migrate') {
    const version = await store.migrate();
    print({ schema_version: version }, () => [`Schema at version ${version}.`]);
    return;
  }
  await store.migrate();

  if (group === 'tenants' && action === 'create') {
    if (!arg || !tenantIdPattern.test(arg))
      throw new UsageError('tenants create needs an id of a-z, 0-9, _ and -');
    if (await store.getTenant(arg)) throw new UsageError(`Tenant "${arg}" already exists.`);
    const tenant = await store.createTenant(arg, values.name ?? arg);
    // A note, not data: `KEY=$(parley tenants create t && parley keys create --tenant t)` captures the key alone.
    note(`Created tenant ${tenant.id}.`);
    if (values.json) out(JSON.stringify(tenant, null, 2));
  } else if (group === 'tenants' && action === 'list') {
    const tenants = await store.listTenants();
    print(tenants, () =>
      table(
        ['ID', 'NAME', 'CREATED'],
        tenants.map((t) => [t.id, t.name, t.created_at]),
      ),
    );
  } else if (group === 'keys' && action === 'create') {
    if (!values.tenant) throw new UsageError('keys create needs --tenant');
    if (!(await store.getTenant(values.tenant))) {
      throw new UsageError(
        `No tenant "${values.tenant}"; create it with: parley tenants create ${values.tenant}`,
      );
    }
    const agents = parseAgents(values.agents);
    const key = generateApiKey();
    const record = await store.createApiKey({
      id: newId('key'),
      tenant_id: values.tenant,
      hash: hashApiKey(key),
      prefix: apiKeyPrefix(key),
      agents,
    });
    note(
      `Created ${record.id} for tenant ${record.tenant_id} (agents: ${agents.join(',')}). It is shown only once:`,
    );
    print({ ...record, key }, () => [key]);
  } else if (group === 'keys' && action === 'list') {
    const keys = await store.listApiKeys(values.tenant);
    print(keys, () =>
      table(
        ['ID', 'TENANT', 'PREFIX', 'AGENTS', 'STATE'],
        keys.map((k) => [
          k.id,
          k.tenant_id,
          k.prefix,
          k.agents.join(','),
          k.revoked_at ? `revoked ${k.revoked_at}` : 'active',
        ]),
      ),
    );
  } else if (group === 'keys' && action === 'revoke') {
    if (!arg) throw new UsageError('keys revoke needs a key id');
    if (!(await store.revokeApiKey(arg))) throw new UsageError(`No active key "${arg}".`);
    print({ id: arg, revoked: true }, () => [`Revoked ${arg}.`]);
  } else {
    throw new UsageError(group ? `Unknown command: ${command.join(' ')}` : 'No command given.');
  }
}

/** A database that does not answer is a configuration problem to the operator: one line, not a stack. */
async function reachable(store: Store): Promise<void> {
  try {
    await store.ping();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError(
      `Invalid configuration: DATABASE_URL does not lead to a PostgreSQL server that answers (${reason}).`,
    );
  }
}

export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${usage}`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(usage);
    return 0;
  }
  if (parsed.values.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (parsed.positionals[0] === 'serve') {
    const { serve } = await import('./server.ts');
    await serve();
    return 0;
  }
  let store: Store | undefined;
  try {
    const config = loadConfig();
    store = await openStore(config);
    if (config.databaseUrl) await reachable(store);
    await run(store, parsed.positionals, parsed.values);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${usage}`);
      return 2;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    // Anything else (a store that fails, say) is one line too, and a non-zero exit for scripts.
    process.stderr.write(`parley: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    await store?.close();
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      tenant: { type: 'string' },
      agents: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean' },
    },
  });
}

if (isMainModule(import.meta.url)) {
  const code = await main(process.argv.slice(2));
  if (code !== 0 || process.argv[2] !== 'serve') process.exitCode = code;
}
