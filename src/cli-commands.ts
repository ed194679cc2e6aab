// The commands of `parley` (cli.ts parses the line and reports errors): what each takes, its help, and
// what it does against the store. Data goes to stdout, notes to stderr.
import { agentIdSchema } from './agents/agent-id.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from './auth/api-keys.ts';
import { newId } from './ids.ts';
import type { Store } from './store/store.ts';

/**
 * A command line the operator got wrong: exit 2, with the usage of the words in `topic` (a command such as
 * ['keys', 'create'], a group such as ['keys']) when they are known, else of every command.
 */
export class UsageError extends Error {
  readonly topic: string[] | undefined;
  constructor(message: string, topic?: string[]) {
    super(message);
    this.topic = topic;
  }
}

/** A command that could not do what was asked: exit 1, one line; `code` is the JSON error's. */
export class CommandError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export interface Values {
  name?: string;
  tenant?: string;
  agents?: string;
  json?: boolean;
}

export interface Context {
  store: Store;
  /** The command's positional argument, when it takes one. */
  arg: string | undefined;
  values: Values;
  /** A line of data on stdout. */
  out(line: string): void;
  /** A note on stderr. */
  note(line: string): void;
  /** `data` as JSON with --json, else `text`'s lines. */
  print(data: unknown, text: () => string[]): void;
}

export interface Command {
  /** The words that select it, `keys create`. */
  name: string;
  /** Its arguments and options, as its usage line shows them. */
  synopsis: string;
  /** One line for the list of commands. */
  summary: string;
  /** What `parley <command> --help` says below the usage line. */
  help: string;
  /** The options it takes besides --json and --help. */
  options: ReadonlyArray<'name' | 'tenant' | 'agents'>;
  /** Its positional argument, if it takes one: the name its usage shows and the error when it is missing. */
  argument?: { name: string; missing: string };
  /**
   * Whether it may create the SQLite database (and its directory): `serve` and `migrate` only. The others
   * refuse a database that is not there, since an empty one made in a mistyped directory would only
   * hide the mistake.
   */
  createsDatabase: boolean;
  /** Refuses a malformed argument or option value with a UsageError, before the store is opened. */
  check?(arg: string | undefined, values: Values): void;
  /** Runs it; absent for `serve`, which cli.ts hands to the server. */
  run?(context: Context): Promise<void>;
}

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

export const commands: readonly Command[] = [
  {
    name: 'serve',
    synopsis: '',
    summary: 'start the service (same as npm start)',
    help: `Starts the service with the configuration of the environment (PORT, HOST, PARLEY_DATA_DIR,
DATABASE_URL, ...). On SQLite it creates the data directory and parley.db when they do not exist.`,
    options: [],
    createsDatabase: true,
  },
  {
    name: 'migrate',
    synopsis: '',
    summary: 'create the database, or apply its pending migrations',
    help: `Applies pending migrations and prints the schema version. On SQLite it creates the data
directory and parley.db when they do not exist: with serve, the only command that does.
The service also migrates at every start.`,
    options: [],
    createsDatabase: true,
    async run({ store, print }) {
      const version = await store.migrate();
      print({ schema_version: version }, () => [`Schema at version ${version}.`]);
    },
  },
  {
    name: 'tenants create',
    synopsis: '<id> [--name NAME]',
    summary: 'create a tenant',
    help: `Creates tenant <id> (1-64 of a-z, 0-9, _ and -, starting with a letter or digit), named NAME
(default: the id). A note goes to stderr; with --json the tenant is printed on stdout.`,
    options: ['name'],
    argument: { name: 'id', missing: 'tenants create needs an id of a-z, 0-9, _ and -' },
    createsDatabase: false,
    check(arg) {
      if (arg !== undefined && !tenantIdPattern.test(arg))
        throw new UsageError('tenants create needs an id of a-z, 0-9, _ and -');
    },
    async run({ store, arg = '', values, out, note }) {
      if (await store.getTenant(arg))
        throw new CommandError('tenant_exists', `tenant "${arg}" already exists`);
      const tenant = await store.createTenant(arg, values.name ?? arg);
      // A note, not data: `KEY=$(parley tenants create t && parley keys create --tenant t)` captures the key alone.
      note(`Created tenant ${tenant.id}.`);
      if (values.json) out(JSON.stringify(tenant, null, 2));
    },
  },
  {
    name: 'tenants list',
    synopsis: '',
    summary: 'list tenants',
    help: 'Prints one tab-separated row per tenant under the header row ID NAME CREATED.',
    options: [],
    createsDatabase: false,
    async run({ store, print }) {
      const tenants = await store.listTenants();
      print(tenants, () =>
        table(
          ['ID', 'NAME', 'CREATED'],
          tenants.map((t) => [t.id, t.name, t.created_at]),
        ),
      );
    },
  },
  {
    name: 'keys create',
    synopsis: '--tenant T [--agents a,b|*]',
    summary: 'create an API key (printed once) for agents a and b, or all',
    help: `Creates an API key of tenant T (which must exist) for agents a and b, or for every agent with *
(the default), and prints it once on stdout: only its SHA-256 is stored. A note naming the
key's id goes to stderr; with --json stdout has the key with its record.`,
    options: ['tenant', 'agents'],
    createsDatabase: false,
    check(_arg, values) {
      if (!values.tenant) throw new UsageError('keys create needs --tenant');
      parseAgents(values.agents);
    },
    async run({ store, values, note, print }) {
      const tenantId = values.tenant ?? '';
      if (!(await store.getTenant(tenantId))) {
        throw new CommandError(
          'tenant_not_found',
          `no tenant "${tenantId}"; create it with: parley tenants create ${tenantId}`,
        );
      }
      const agents = parseAgents(values.agents);
      const key = generateApiKey();
      const record = await store.createApiKey({
        id: newId('key'),
        tenant_id: tenantId,
        hash: hashApiKey(key),
        prefix: apiKeyPrefix(key),
        agents,
      });
      note(
        `Created ${record.id} for tenant ${record.tenant_id} (agents: ${agents.join(',')}). It is shown only once:`,
      );
      print({ ...record, key }, () => [key]);
    },
  },
  {
    name: 'keys list',
    synopsis: '[--tenant T]',
    summary: 'list API keys (never the keys themselves)',
    help: `Prints one tab-separated row per key (of tenant T only, with --tenant) under the header row
ID TENANT PREFIX AGENTS STATE; STATE is "active" or "revoked <time>". The keys themselves
cannot be shown: only their SHA-256 is stored.`,
    options: ['tenant'],
    createsDatabase: false,
    async run({ store, values, print }) {
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
    },
  },
  {
    name: 'keys revoke',
    synopsis: '<key_id>',
    summary: 'revoke an API key',
    help: `Revokes the key with this id (see keys list); the service refuses it from the next request on.
Fails when no active key has this id.`,
    options: [],
    argument: { name: 'key_id', missing: 'keys revoke needs a key id' },
    createsDatabase: false,
    async run({ store, arg = '', print }) {
      if (!(await store.revokeApiKey(arg)))
        throw new CommandError('api_key_not_found', `no active key "${arg}"`);
      print({ id: arg, revoked: true }, () => [`Revoked ${arg}.`]);
    },
  },
];
