// GET /widget.js: the <parley-chat> web component (packages/widget) as one ES module, bundled by esbuild on the
// first request and kept in memory, plain and gzipped, each with its ETag. esbuild is imported then, not at
// start, so a process that never serves the widget never loads it, and its helper process is stopped after
// each build. A failed build answers 503 with Retry-After and is not tried again before that time.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.ts';

export const WIDGET_ENTRY = join(import.meta.dirname, '../../../packages/widget/src/index.ts');

export interface WidgetBundle {
  code: string;
  etag: string;
  gzip: Buffer;
  gzipEtag: string;
}

/** How long a failed build is not tried again: its 503s say to retry after this. */
export const WIDGET_RETRY_MS = 30_000;

/** Builds of this process in flight: esbuild's helper process is shared, and stopped when none is left. */
let building = 0;

/**
 * Bundles the widget (its client included), minified for browsers that have custom elements and `#private`.
 * esbuild's helper process (some 17 MB) is stopped once no build is left; the next build starts a new one,
 * which also recovers from a helper that died.
 */
export async function buildWidget(entry = WIDGET_ENTRY): Promise<WidgetBundle> {
  const esbuild = await import('esbuild');
  building++;
  try {
    return await bundleWidget(esbuild, entry);
  } finally {
    if (--building === 0) await esbuild.stop();
  }
}

async function bundleWidget(
  { build, transform }: typeof import('esbuild'),
  entry: string,
): Promise<WidgetBundle> {
  const result = await build({
    entryPoints: [entry],
    plugins: [
      {
        // A stylesheet import is its minified text (the widget puts it in its shadow root's <style>).
        name: 'css-text',
        setup(plugin) {
          plugin.onLoad({ filter: /\.css$/ }, async (args) => {
            const css = await transform(await readFile(args.path, 'utf8'), { loader: 'css', minify: true });
            return { contents: `export default ${JSON.stringify(css.code.trim())};`, loader: 'js' };
          });
        },
      },
    ],
    // The workspace packages' TypeScript sources (their `parley-source` export), not a build of them.
    conditions: ['parley-source'],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]?.text ?? '';
  const hash = createHash('sha256').update(code).digest('base64url').slice(0, 27);
  // Two encodings are two representations: each has its own ETag.
  return { code, etag: `"${hash}"`, gzip: gzipSync(code, { level: 9 }), gzipEtag: `"${hash}-gzip"` };
}

/** Whether Accept-Encoding takes gzip (by name or `*`, and not with q=0). */
export function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((part) => {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return (coding.trim() === 'gzip' || coding.trim() === '*') && (q === undefined || Number(q.slice(2)) > 0);
  });
}

/** Whether If-None-Match names `etag`: `*`, or the same tag by the weak comparison (a `W/` prefix ignored). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === opaque(etag));
}

export interface WidgetRoutesOptions {
  /** The module to bundle (a test's broken one); default the widget's. */
  entry?: string;
  /** The clock that times the pause after a failed build (a test's); default Date.now. */
  now?: () => number;
}

export const widgetRoutes: FastifyPluginAsyncZod<WidgetRoutesOptions> = async (app, options) => {
  // A module script from another origin is fetched with CORS: the page embedding the chat is elsewhere.
  serveModule(app, '/widget.js', {
    entry: options.entry ?? WIDGET_ENTRY,
    now: options.now,
    what: 'The chat widget',
    headers: { 'access-control-allow-origin': '*' },
  });
};

export interface ModuleOptions {
  entry: string;
  now?: (() => number) | undefined;
  /** What the module is, for the 503's message ("The chat widget"). */
  what: string;
  /** Headers of every answer, the 503 included (set before the build, so that it is readable too). */
  headers?: Record<string, string>;
}

/**
 * GET `path`: the module bundled from `entry` on the first request, then served from memory, plain or gzipped
 * with its ETag. One build per process; a failed one is remembered until WIDGET_RETRY_MS after it, so that a
 * broken install does not start a bundler at every request.
 */
export function serveModule(
  app: Parameters<FastifyPluginAsyncZod>[0],
  path: string,
  options: ModuleOptions,
): void {
  const now = options.now ?? Date.now;
  let built: Promise<WidgetBundle> | undefined;
  let failedAt: number | undefined;
  const unavailable = (waitMs: number, cause?: unknown) =>
    new AppError('service_unavailable', `${options.what} could not be built; retry later.`, {
      headers: { 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))) },
      cause,
    });
  const bundle = (): Promise<WidgetBundle> => {
    if (failedAt !== undefined) {
      const waitMs = failedAt + WIDGET_RETRY_MS - now();
      if (waitMs > 0) return Promise.reject(unavailable(waitMs));
      failedAt = undefined;
    }
    built ??= buildWidget(options.entry).catch((err: unknown) => {
      built = undefined;
      failedAt = now();
      throw unavailable(WIDGET_RETRY_MS, err);
    });
    return built;
  };

  app.get(
    path,
    {
      schema: {
        hide: true,
        headers: z.object({
          'if-none-match': z.string().optional(),
          'accept-encoding': z.string().optional(),
        }),
      },
    },
    async (request, reply) => {
      reply.headers(options.headers ?? {});
      const code = await bundle().catch((err: unknown) => {
        reply.header('cache-control', 'no-store');
        throw err;
      });
      const gzip = acceptsGzip(request.headers['accept-encoding']);
      const etag = gzip ? code.gzipEtag : code.etag;
      reply.header('cache-control', 'no-cache').header('vary', 'accept-encoding').header('etag', etag);
      if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send();
      reply.type('text/javascript; charset=utf-8');
      return gzip ? reply.header('content-encoding', 'gzip').send(code.gzip) : reply.send(code.code);
    },
  );
}
