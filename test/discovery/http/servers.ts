/** Small HTTP and HTTPS servers on loopback (127.0.0.1 unless told) for the web tests, and a self-signed certificate. */
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import * as x509 from "@peculiar/x509";

export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface TestWebServer {
  port: number;
  close(): Promise<void>;
}

let certificate: Promise<{ cert: string; key: string }> | undefined;

export function selfSigned(): Promise<{ cert: string; key: string }> {
  certificate ??= (async () => {
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
    const algorithm = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
    const keys = await webcrypto.subtle.generateKey(algorithm, true, ["sign", "verify"]);
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: "01",
      name: "CN=sightline-test",
      notBefore: new Date(Date.now() - 86_400_000),
      notAfter: new Date(Date.now() + 86_400_000),
      keys: keys as Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]["keys"],
      signingAlgorithm: algorithm,
    });
    const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
    const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8
      .toString("base64")
      .match(/.{1,64}/g)
      ?.join("\n")}\n-----END PRIVATE KEY-----\n`;
    return { cert: cert.toString("pem"), key };
  })();
  return certificate;
}

export async function startWebServer(
  handler: Handler,
  options: { tls?: boolean; host?: string } = {},
): Promise<TestWebServer> {
  const server = options.tls ? createHttpsServer(await selfSigned(), handler) : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, options.host ?? "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
