/** Calls Sightline's API as a client would, with a key pair; throws on anything but 2xx. */
export async function callApi(
  url: string,
  keys: { access: string; secret: string },
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      SERVICE_ACCESS_KEY: keys.access,
      SERVICE_SECRET_KEY: keys.secret,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = (await response.json()) as { result: unknown; message: string };
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${parsed.message}`);
  return parsed.result;
}
