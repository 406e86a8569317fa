/** A self-signed P-256 certificate and its key, written by Debian's openssl, for servers the tests start. */
import { execFileSync } from "node:child_process";

export function writeSelfSignedCertificate(options: {
  keyFile: string;
  certFile: string;
  commonName: string;
  days: number;
  /** Extra `-addext` values, e.g. `subjectAltName=IP:127.0.0.1`. */
  extensions?: string[];
}): void {
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      String(options.days),
      "-subj",
      `/CN=${options.commonName}`,
      ...(options.extensions ?? []).flatMap((extension) => ["-addext", extension]),
      "-keyout",
      options.keyFile,
      "-out",
      options.certFile,
    ],
    { stdio: "ignore" },
  );
}
