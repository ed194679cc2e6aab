// The `parley` command: serve, migrate, and manage tenants and API keys against the configured store. Data
// goes to stdout (tab-separated with a header row, or JSON with --json), notes and errors to stderr. An
// error is one line (JSON with --json) and exits 1; a usage error exits 2 and shows the usage it missed.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Command, CommandError, commands, UsageError, type Values } from './cli-commands.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { isMainModule } from './main-module.ts';
import { openStore, sqliteFile } from './store/open-store.ts';
import type { Store } from './store/store.ts';
import { VERSION } from './version.ts';

const groups = ['tenants', 'keys'];
const column = (left: string, right: string) => `  ${left.padEnd(42)}${right}`;
const usageLine = (command: Command) =>
  [`parley ${command.name}`, command.synopsis, command.name === 'serve' ? '' : '[--json]']
    .filter(Boolean)
    .join(' ');
const listed = (command: Command) => column(`${command.name} ${command.synopsis}`.trim(), command.summary);

const overview = `Usage: parley <command> [options]

Commands:
${commands.map(listed).join('\n')}
${column('help [command]', 'print this, or the help of one command')}

Options:
${column('--json', 'print data as JSON (lists as arrays), and errors as JSON')}
${column('--version', 'print the version')}
${column('-h, --help', 'print this; parley <command> --help for one command')}

Only serve and migrate create the SQLite database; the other commands need parley.db in
PARLEY_DATA_DIR (./data by default) and exit 1 naming the path when it is not there.
Errors are one line on stderr; they exit 1, or 2 for a command line that is wrong.
`;

/** The help of a command, of a group (`keys`), or the overview, for the words given. */
function helpText(topic: string[]): string {
  const command = commands.find((c) => c.name === topic.join(' '));
  if (command) return `Usage: ${usageLine(command)}\n\n${command.help}\n`;
  const [group] = topic;
  if (topic.length === 1 && group && groups.includes(group)) {
    const members = commands.filter((c) => c.name.startsWith(`${group} `));
    const actions = members.map((c) => c.name.slice(group.length + 1)).join('|');
    return `Usage: parley ${group} <${actions}> ...\n\n${members.map(listed).join('\n')}\n\n"parley ${group} <action> --help" prints the help of one.\n`;
  }
  return overview;
}

/** The command the words name, and the words after it; a UsageError naming the words that are known. */
function resolveCommand(words: string[]): { command: Command; rest: string[]; topic: string[] } {
  const [first, second] = words;
  if (first === undefined) throw new UsageError('no command given', []);
  const byName = (name: string) => commands.find((c) => c.name === name);
  if (groups.includes(first)) {
    const actions = commands.filter((c) => c.name.startsWith(`${first} `)).map((c) => c.name.split(' ')[1]);
    const command = second === undefined ? undefined : byName(`${first} ${second}`);
    if (!command) {
      const message =
        second === undefined
          ? `${first} needs one of: ${actions.join(', ')}`
          : `unknown command: ${first} ${second}`;
      throw new UsageError(message, [first]);
    }
    return { command, rest: words.slice(2), topic: [first, second as string] };
  }
  const command = byName(first);
  if (!command) throw new UsageError(`unknown command: ${words.join(' ')}`, []);
  return { command, rest: words.slice(1), topic: [first] };
}

/** Refuses arguments and options that the command does not take, and a missing argument. */
function checkLine(command: Command, rest: string[], values: Values): string | undefined {
  const allowed = command.argument ? 1 : 0;
  if (rest.length > allowed) throw new UsageError(`${command.name}: unexpected argument "${rest[allowed]}"`);
  for (const option of ['name', 'tenant', 'agents'] as const) {
    if (values[option] !== undefined && !command.options.includes(option))
      throw new UsageError(`${command.name} takes no --${option}`);
  }
  if (command.name === 'serve' && values.json) throw new UsageError('serve takes no --json');
  const [arg] = rest;
  if (command.argument && arg === undefined) throw new UsageError(command.argument.missing);
  command.check?.(arg, values);
  return arg;
}

/**
 * On SQLite, a command other than serve and migrate refuses a data directory or database that is not
 * there: opening it would create an empty one, and `keys list` in the wrong directory would answer an
 * empty list instead of saying that it looked in the wrong place. PostgreSQL databases are not created.
 */
function requireDatabase(config: Config): void {
  if (config.databaseUrl) return;
  const dir = resolve(config.dataDir);
  const fix = `point PARLEY_DATA_DIR at the service's data directory (default ./data), or create it with "parley migrate"`;
  if (!existsSync(dir))
    throw new CommandError('database_not_found', `data directory ${dir} does not exist; ${fix}`);
  const file = sqliteFile(dir);
  if (!existsSync(file))
    throw new CommandError('database_not_found', `database ${file} does not exist; ${fix}`);
}

/** A database that does not answer is a configuration problem to the operator: one line, not a stack. */
async function reachable(store: Store): Promise<void> {
  try {
    await store.ping();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new CommandError(
      'database_unreachable',
      `DATABASE_URL does not lead to a PostgreSQL server that answers (${reason})`,
    );
  }
}

async function execute(command: Command, arg: string | undefined, values: Values): Promise<void> {
  const config = loadConfig();
  if (!command.createsDatabase) requireDatabase(config);
  const store = await openStore(config);
  try {
    if (config.databaseUrl) await reachable(store);
    if (command.name !== 'migrate') await store.migrate();
    const out = (line: string) => process.stdout.write(`${line}\n`);
    await command.run?.({
      store,
      arg,
      values,
      out,
      note: (line) => process.stderr.write(`${line}\n`),
      print: (data, text) => {
        if (values.json) out(JSON.stringify(data, null, 2));
        else for (const line of text()) out(line);
      },
    });
  } finally {
    await store.close();
  }
}

/** An error as one line on stderr (JSON with --json), the usage after a usage error; the exit code. */
function report(err: unknown, json: boolean, topic: string[]): number {
  // One line whatever the error: a message of several lines (a driver's, say) is joined.
  const message = (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
  const [code, text, exit] =
    err instanceof UsageError
      ? ['usage_error', message, 2]
      : err instanceof CommandError
        ? [err.code, message, 1]
        : err instanceof ConfigError
          ? ['invalid_configuration', message.replace(/^Invalid configuration/, 'invalid configuration'), 1]
          : ['failed', message, 1];
  if (json) process.stderr.write(`${JSON.stringify({ error: { code, message: text } })}\n`);
  else process.stderr.write(`parley: ${text}\n${exit === 2 ? `\n${helpText(topic)}` : ''}`);
  return exit;
}

export async function main(argv: string[]): Promise<number> {
  let json = argv.includes('--json');
  let topic: string[] = [];
  try {
    const { values, positionals } = parse(argv);
    json = values.json === true;
    if (positionals[0] === 'help' || values.help) {
      const words = positionals[0] === 'help' ? positionals.slice(1) : positionals;
      // A group alone (`parley keys --help`) is a topic of its own; other words must name a command.
      const group = words.length === 1 && groups.includes(words[0] ?? '');
      if (words.length > 0) topic = group ? words : resolveCommand(words).topic;
      process.stdout.write(helpText(topic));
      return 0;
    }
    if (values.version) {
      process.stdout.write(`${VERSION}\n`);
      return 0;
    }
    const resolved = resolveCommand(positionals);
    topic = resolved.topic;
    const arg = checkLine(resolved.command, resolved.rest, values);
    if (resolved.command.name === 'serve') {
      // The server reports its own errors (a bad variable is one line and exit 1, as here).
      const { serve } = await import('./server.ts');
      await serve();
      return 0;
    }
    await execute(resolved.command, arg, values);
    return 0;
  } catch (err) {
    return report(err, json, (err instanceof UsageError && err.topic) || topic);
  }
}

const options = {
  name: { type: 'string' },
  tenant: { type: 'string' },
  agents: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** parseArgs's messages, shortened to what the operator needs to read. */
function parseError(message: string): string {
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  const missing = /^Option '(?:-\w, )?(--[\w-]+) <value>' argument missing/.exec(message);
  if (missing) return `${missing[1]} needs a value`;
  const ambiguous = /^Option '(--[\w-]+)' argument is ambiguous/.exec(message);
  if (ambiguous)
    return `${ambiguous[1]} needs a value (one that starts with - is written ${ambiguous[1]}=-…)`;
  return message;
}

/** The line parsed; an unknown or incomplete option is a UsageError shown with the command's usage. */
function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options });
  } catch (err) {
    const { positionals } = parseArgs({ args: argv, allowPositionals: true, options, strict: false });
    let topic: string[] = [];
    try {
      topic = resolveCommand(positionals).topic;
    } catch {
      // No command that is known: the overview is the usage to show.
    }
    throw new UsageError(parseError(err instanceof Error ? err.message : String(err)), topic);
  }
}

if (isMainModule(import.meta.url)) {
  const code = await main(process.argv.slice(2));
  if (code !== 0 || process.argv[2] !== 'serve') process.exitCode = code;
}
