// Encodes a multipart/form-data body with the platform's own FormData, for app.inject.
export interface EncodedForm {
  payload: Buffer;
  contentType: string;
}

export async function encodeForm(form: FormData): Promise<EncodedForm> {
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    contentType: request.headers.get('content-type') ?? 'multipart/form-data',
  };
}

/** A form with one `file` part and, when given, a `metadata` part. */
export function fileForm(
  content: Buffer | string,
  filename: string,
  type: string,
  metadata?: string,
): FormData {
  const form = new FormData();
  form.append('file', new Blob([content], { type }), filename);
  if (metadata !== undefined) form.append('metadata', metadata);
  return form;
}

/** A valid 1x1 PNG. */
export const tinyPng = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4f10000000049454e44ae426082',
  'hex',
);

/** The start of a PDF: enough for type sniffing. */
export const tinyPdf = Buffer.from('%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n');
