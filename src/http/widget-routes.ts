// GET /widget.js: the <parley-chat> web component (packages/widget) as one ES module, bundled by esbuild on the
// first request and kept in memory, plain and gzipped, each with its ETag. esbuild is imported then, not at
// start, so a process that never serves the widget never loads it.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';

export const WIDGET_ENTRY = join(import.meta.dirname, '../../packages/widget/src/index.ts');

export interface WidgetBundle {
  code: string;
  etag: string;
  gzip: Buffer;
  gzipEtag: string;
}

/** Bundles the widget (its client included), minified for browsers that have custom elements and `#private`. */
export async function buildWidget(entry = WIDGET_ENTRY): Promise<WidgetBundle> {
  const { build, transform } = await import('esbuild');
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

export const widgetRoutes: FastifyPluginAsyncZod = async (app) => {
  // One build per process; a failed one is tried again on the next request.
  let bundle: Promise<WidgetBundle> | undefined;
  const widget = () => {
    bundle ??= buildWidget().catch((err: unknown) => {
      bundle = undefined;
      throw err;
    });
    return bundle;
  };

  app.get(
    '/widget.js',
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
      const built = await widget();
      const gzip = acceptsGzip(request.headers['accept-encoding']);
      const etag = gzip ? built.gzipEtag : built.etag;
      // A module script from another origin is fetched with CORS: the page embedding the chat is elsewhere.
      reply
        .header('access-control-allow-origin', '*')
        .header('cache-control', 'no-cache')
        .header('vary', 'accept-encoding')
        .header('etag', etag);
      const known = request.headers['if-none-match'];
      if (known?.split(/\s*,\s*/).includes(etag)) return reply.code(304).send();
      reply.type('text/javascript; charset=utf-8');
      return gzip ? reply.header('content-encoding', 'gzip').send(built.gzip) : reply.send(built.code);
    },
  );
};
