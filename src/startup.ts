// What the service tells an operator at start and stop: on a terminal, a few plain lines (store, agents,
// where the API and its reference are, and how to create the first key as a command that works when
// pasted); in a log (not a terminal), the same facts as one JSON record. server.ts prints them.
import { realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from './config.ts';
import { VERSION } from './version.ts';

const projectRoot = fileURLToPath(new URL('..', import.meta.url));
const DEFAULT_DATA_DIR = './data';

export interface StartupFacts {
  /** `sqlite /abs/path/parley.db` or `postgresql host:port/db` (never the credentials). */
  store: string;
  agents: string[];
  /** Whether GET /demo is served. */
  demo: boolean;
  /** What the demo page exposes where it is served (or why it is not, though asked); null when nothing. */
  demoWarning: string | null;
  /** The shell command that creates the first key; null when an API key exists. */
  keyHint: string | null;
}

/** Quotes for POSIX sh: left bare when that is safe, else in single quotes. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

const samePath = (a: string, b: string) => {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
};

/**
 * How to run the CLI from where the service was started: `npx parley` in the project's own directory (npm
 * runs the project's bin, with no banner), else the bin by its path on the Node that runs now.
 */
export function cliCommand(cwd = process.cwd()): string {
  if (samePath(cwd, projectRoot)) return 'npx parley';
  return `${shellQuote(process.execPath)} ${shellQuote(join(projectRoot, 'bin', 'parley.js'))}`;
}

/**
 * The command that creates a key for every agent of tenant `default` (and the tenant first, when it does
 * not exist), printing only the key on stdout. A data directory other than the default is named in it, so
 * that it works pasted into a fresh shell; a DATABASE_URL is not (it carries a password).
 */
export function keyHintCommand(config: Pick<Config, 'dataDir' | 'databaseUrl'>, tenantExists: boolean) {
  const env =
    !config.databaseUrl && config.dataDir !== DEFAULT_DATA_DIR
      ? `PARLEY_DATA_DIR=${shellQuote(resolve(config.dataDir))} `
      : '';
  const cli = `${env}${cliCommand()}`;
  const create = `${cli} keys create --tenant default --agents '*'`;
  return tenantExists ? create : `${cli} tenants create default && ${create}`;
}

/** The store as an operator recognises it, without credentials. */
export function describeStore(config: Pick<Config, 'dataDir' | 'databaseUrl'>): string {
  if (!config.databaseUrl) return `sqlite ${resolve(config.dataDir, 'parley.db')}`;
  try {
    const url = new URL(config.databaseUrl);
    return `postgresql ${url.host}${url.pathname}`;
  } catch {
    return 'postgresql';
  }
}

/** Where a client on this machine reaches the service: a wildcard address is shown as a loopback one. */
export function baseUrl(address: { address: string; port: number; family: string }): string {
  const host =
    address.address === '0.0.0.0'
      ? '127.0.0.1'
      : address.address === '::'
        ? 'localhost'
        : address.family === 'IPv6'
          ? `[${address.address}]`
          : address.address;
  return `http://${host}:${address.port}`;
}

/** The start-up summary for a terminal. */
export function startupSummary(facts: StartupFacts, url: string): string {
  const agents = facts.agents.length > 0 ? facts.agents.join(', ') : 'none';
  const lines = [
    `Parley ${VERSION} is listening on ${url}`,
    `  store   ${facts.store}`,
    `  agents  ${agents}`,
    `  docs    ${url}/docs`,
    ...(facts.demo ? [`  demo    ${url}/demo`] : []),
  ];
  if (facts.demoWarning) lines.push('', `Warning: ${facts.demoWarning}`);
  if (facts.keyHint) {
    lines.push('', 'No API key exists yet. Create one (it is printed once) with:', '', `  ${facts.keyHint}`);
  }
  return `${lines.join('\n')}\n\n`;
}
