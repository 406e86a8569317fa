/**
 * The real-server lab: Debian's own servers, each started on a loopback address and port of its own,
 * in a private directory, with its ground truth (the package and the version it reports). Every server
 * starts exposed (its default or anonymous configuration); `locked: true` starts its locked-down twin
 * where the server has one (a password, no anonymous access) — the exposure checks use both.
 *
 *   const lab = await startRealLab({ base: "127.121.1" });   // every server it can start
 *   const redis = await startRealServer("redis", { address: "127.121.1.2", port: 6379, locked: true });
 *
 * A server whose binary is missing or that does not come up is reported, not thrown: `startRealLab`
 * answers `missing` with the reason; tests skip on it, or fail under CI=true (see requireServers).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeSelfSignedCertificate } from "../openssl-certificate.ts";

export type RealServerName =
  | "redis"
  | "memcached"
  | "mariadb"
  | "postgresql"
  | "mosquitto"
  | "vsftpd"
  | "openldap"
  | "openssh"
  | "dovecot-imap"
  | "dovecot-pop3"
  | "nsd"
  | "nginx"
  | "squid"
  | "rsync"
  | "tls"
  | "snmpd";

/** What identification should say about a server: from its package, not from what Sightline saw. */
export interface GroundTruth {
  /** nmap's protocol name. */
  service: string;
  /** Matches the product Sightline should name. */
  product: RegExp;
  /** The upstream version the package holds ("7.0.15" of "5:7.0.15-1~deb12u10"). */
  version: string;
  /** Does the server tell its version on the wire? (PostgreSQL, Mosquitto, Dovecot, slapd do not.) */
  versionTold: boolean;
  /** The Debian package and its version, as dpkg reports it. */
  package: string;
  packageVersion: string;
  transport: "tcp" | "udp";
}

export interface RealServer {
  name: RealServerName;
  address: string;
  port: number;
  locked: boolean;
  truth: GroundTruth;
  /** The server's own directory (configuration, data, logs). */
  dir: string;
  stop(): Promise<void>;
}

interface Definition {
  package: string;
  binary: string;
  service: string;
  product: RegExp;
  versionTold: boolean;
  transport?: "tcp" | "udp";
  /** How the server is started: a command line, files written first. */
  start(ctx: { dir: string; address: string; port: number; locked: boolean }): {
    command: string;
    args: string[];
    user?: string;
    prepare?: () => void;
  };
  /** Upstream version from the package version (default: between the epoch and the Debian revision). */
  upstream?: (packageVersion: string) => string;
}

const write = (path: string, text: string) => writeFileSync(path, text);
const pgBin = () => {
  const versions = existsSync("/usr/lib/postgresql")
    ? execFileSync("ls", ["/usr/lib/postgresql"]).toString().split(/\s+/).filter(Boolean)
    : [];
  return `/usr/lib/postgresql/${versions.sort((a, b) => Number(b) - Number(a))[0] ?? "15"}/bin`;
};

const DEFINITIONS: Record<RealServerName, Definition> = {
  redis: {
    package: "redis-server",
    binary: "/usr/bin/redis-server",
    service: "redis",
    product: /^Redis/,
    versionTold: true,
    start: ({ dir, address, port, locked }) => ({
      command: "/usr/bin/redis-server",
      args: [
        "--port",
        String(port),
        "--bind",
        address,
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        dir,
        "--daemonize",
        "no",
        "--protected-mode",
        "no",
        ...(locked ? ["--requirepass", "sightline-lab-secret"] : []),
      ],
    }),
  },
  memcached: {
    package: "memcached",
    binary: "/usr/bin/memcached",
    service: "memcached",
    product: /^memcached$/,
    versionTold: true,
    // The locked twin listens on loopback only through a UNIX socket would hide it; memcached has no
    // password without SASL, so its twin is the same server (exposures decides by address).
    start: ({ address, port }) => ({
      command: "/usr/bin/memcached",
      args: ["-l", address, "-p", String(port), "-U", "0", "-u", "nobody", "-m", "16"],
    }),
  },
  mariadb: {
    package: "mariadb-server",
    binary: "/usr/sbin/mariadbd",
    service: "mysql",
    product: /^MariaDB$/,
    versionTold: true,
    upstream: (v) => /(?:\d+:)?(\d+\.\d+\.\d+)/.exec(v)?.[1] ?? v,
    start: ({ dir, address, port }) => ({
      prepare: () => {
        execFileSync(
          "/usr/bin/mariadb-install-db",
          [
            "--no-defaults",
            `--datadir=${dir}/data`,
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
          ],
          { stdio: "ignore", timeout: 120_000 },
        );
      },
      command: "/usr/sbin/mariadbd",
      args: [
        "--no-defaults",
        `--datadir=${dir}/data`,
        `--socket=${dir}/mysqld.sock`,
        `--pid-file=${dir}/mysqld.pid`,
        `--port=${port}`,
        `--bind-address=${address}`,
        "--user=root",
        "--skip-log-bin",
        "--innodb-buffer-pool-size=16M",
        "--skip-name-resolve",
      ],
    }),
  },
  postgresql: {
    package: "postgresql",
    binary: `${pgBin()}/postgres`,
    service: "postgresql",
    product: /^PostgreSQL/,
    versionTold: false,
    upstream: () =>
      execFileSync(`${pgBin()}/postgres`, ["--version"])
        .toString()
        .match(/(\d+\.\d+)/)?.[1] ?? "",
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        chownSync(dir, uid("postgres"), gid("postgres"));
        execFileSync(
          "runuser",
          [
            "-u",
            "postgres",
            "--",
            `${pgBin()}/initdb`,
            "-D",
            `${dir}/data`,
            "-U",
            "postgres",
            `--auth=${locked ? "scram-sha-256" : "trust"}`,
            "--no-sync",
          ],
          { stdio: "ignore", timeout: 120_000 },
        );
      },
      command: "runuser",
      args: [
        "-u",
        "postgres",
        "--",
        `${pgBin()}/postgres`,
        "-D",
        `${dir}/data`,
        "-p",
        String(port),
        "-c",
        `listen_addresses=${address}`,
        "-c",
        `unix_socket_directories=${dir}`,
        "-c",
        "fsync=off",
      ],
    }),
  },
  mosquitto: {
    package: "mosquitto",
    binary: "/usr/sbin/mosquitto",
    service: "mqtt",
    product: /^Mosquitto$/,
    // Anonymous clients may read its $SYS/broker/version; the locked twin tells nothing.
    versionTold: true,
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        write(`${dir}/passwd`, "");
        write(
          `${dir}/mosquitto.conf`,
          [
            `listener ${port} ${address}`,
            `allow_anonymous ${locked ? "false" : "true"}`,
            ...(locked ? [`password_file ${dir}/passwd`] : []),
            "persistence false",
            "log_dest stderr",
            "user root",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/mosquitto",
      args: ["-c", `${dir}/mosquitto.conf`],
    }),
  },
  vsftpd: {
    package: "vsftpd",
    binary: "/usr/sbin/vsftpd",
    service: "ftp",
    product: /^vsftpd$/,
    versionTold: true,
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        mkdirSync(`${dir}/pub`, { recursive: true });
        mkdirSync("/var/run/vsftpd/empty", { recursive: true });
        chmodSync(dir, 0o755);
        write(`${dir}/pub/README`, "Sightline lab\n");
        write(
          `${dir}/vsftpd.conf`,
          [
            "listen=YES",
            "listen_ipv6=NO",
            `listen_address=${address}`,
            `listen_port=${port}`,
            "background=NO",
            `anonymous_enable=${locked ? "NO" : "YES"}`,
            `anon_root=${dir}/pub`,
            "local_enable=NO",
            "write_enable=NO",
            "secure_chroot_dir=/var/run/vsftpd/empty",
            "seccomp_sandbox=NO",
            "pasv_enable=YES",
            "xferlog_enable=NO",
            "run_as_launching_user=YES",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/vsftpd",
      args: [`${dir}/vsftpd.conf`],
    }),
  },
  openldap: {
    package: "slapd",
    binary: "/usr/sbin/slapd",
    service: "ldap",
    product: /OpenLDAP/,
    versionTold: false,
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        mkdirSync(`${dir}/db`, { recursive: true });
        write(
          `${dir}/slapd.conf`,
          [
            "include /etc/ldap/schema/core.schema",
            "include /etc/ldap/schema/cosine.schema",
            "include /etc/ldap/schema/inetorgperson.schema",
            "modulepath /usr/lib/ldap",
            "moduleload back_mdb",
            `pidfile ${dir}/slapd.pid`,
            ...(locked ? ["disallow bind_anon", "require authc"] : []),
            "database mdb",
            'suffix "dc=lab,dc=test"',
            'rootdn "cn=admin,dc=lab,dc=test"',
            "rootpw sightline-lab-secret",
            `directory ${dir}/db`,
            "maxsize 10485760",
            locked ? "access to * by users read by * none" : "access to * by * read",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/slapd",
      args: ["-d", "0", "-h", `ldap://${address}:${port}/`, "-f", `${dir}/slapd.conf`],
    }),
  },
  openssh: {
    package: "openssh-server",
    binary: "/usr/sbin/sshd",
    service: "ssh",
    product: /^OpenSSH$/,
    versionTold: true,
    upstream: (v) => /(?:\d+:)?([\d.]+p\d+)/.exec(v)?.[1] ?? v,
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        mkdirSync("/run/sshd", { recursive: true });
        execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", `${dir}/host_key`]);
        write(
          `${dir}/sshd_config`,
          [
            `ListenAddress ${address}:${port}`,
            `HostKey ${dir}/host_key`,
            `PidFile ${dir}/sshd.pid`,
            `PasswordAuthentication ${locked ? "no" : "yes"}`,
            "UsePAM no",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/sshd",
      args: ["-D", "-e", "-f", `${dir}/sshd_config`],
    }),
  },
  "dovecot-imap": dovecot("imap"),
  "dovecot-pop3": dovecot("pop3"),
  // BIND listens only on addresses configured on an interface; NSD binds the address it is given.
  nsd: {
    package: "nsd",
    binary: "/usr/sbin/nsd",
    service: "domain",
    product: /NSD/,
    versionTold: true,
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        write(
          `${dir}/lab.test.zone`,
          [
            "$ORIGIN lab.test.",
            "$TTL 300",
            "@ IN SOA ns1.lab.test. hostmaster.lab.test. 1 3600 600 86400 300",
            "@ IN NS ns1.lab.test.",
            "ns1 IN A 127.121.0.53",
            "www IN A 127.121.0.80",
            "",
          ].join("\n"),
        );
        write(
          `${dir}/nsd.conf`,
          [
            "server:",
            `  ip-address: ${address}@${port}`,
            `  port: ${port}`,
            `  zonesdir: "${dir}"`,
            `  pidfile: "${dir}/nsd.pid"`,
            '  database: ""',
            '  username: ""',
            '  chroot: ""',
            `  xfrdfile: "${dir}/xfrd.state"`,
            `  zonelistfile: "${dir}/zone.list"`,
            "  server-count: 1",
            `  hide-version: ${locked ? "yes" : "no"}`,
            "  verbosity: 0",
            "remote-control:",
            "  control-enable: no",
            "zone:",
            "  name: lab.test",
            "  zonefile: lab.test.zone",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/nsd",
      args: ["-d", "-c", `${dir}/nsd.conf`],
    }),
  },
  nginx: {
    package: "nginx-light",
    binary: "/usr/sbin/nginx",
    service: "http",
    product: /^nginx$/,
    versionTold: true,
    start: ({ dir, address, port }) => ({
      prepare: () => {
        mkdirSync(`${dir}/www`, { recursive: true });
        write(`${dir}/www/index.html`, "<title>Sightline lab</title>\n");
        write(
          `${dir}/nginx.conf`,
          [
            `pid ${dir}/nginx.pid;`,
            `error_log ${dir}/error.log;`,
            "worker_processes 1;",
            "daemon off;",
            "events { worker_connections 64; }",
            "http {",
            "  access_log off;",
            `  client_body_temp_path ${dir}/body;`,
            `  proxy_temp_path ${dir}/proxy;`,
            `  fastcgi_temp_path ${dir}/fastcgi;`,
            `  uwsgi_temp_path ${dir}/uwsgi;`,
            `  scgi_temp_path ${dir}/scgi;`,
            `  server { listen ${address}:${port}; root ${dir}/www; }`,
            "}",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/nginx",
      args: ["-c", `${dir}/nginx.conf`, "-p", dir],
    }),
  },
  squid: {
    package: "squid",
    binary: "/usr/sbin/squid",
    service: "http-proxy",
    product: /^Squid/,
    versionTold: true,
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        chownSync(dir, uid("proxy"), gid("proxy"));
        write(
          `${dir}/squid.conf`,
          [
            `http_port ${address}:${port}`,
            `pid_filename ${dir}/squid.pid`,
            "cache deny all",
            "access_log none",
            `cache_log ${dir}/cache.log`,
            `coredump_dir ${dir}`,
            "cache_mem 8 MB",
            "shutdown_lifetime 0 seconds",
            locked ? "http_access deny all" : "http_access allow all",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/squid",
      args: ["-N", "-f", `${dir}/squid.conf`],
    }),
  },
  rsync: {
    package: "rsync",
    binary: "/usr/bin/rsync",
    service: "rsync",
    product: /^rsync$/,
    versionTold: false,
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        mkdirSync(`${dir}/pub`, { recursive: true });
        write(`${dir}/pub/README`, "Sightline lab\n");
        write(`${dir}/secrets`, "lab:sightline-lab-secret\n");
        chmodSync(`${dir}/secrets`, 0o600);
        write(
          `${dir}/rsyncd.conf`,
          [
            "use chroot = no",
            `pid file = ${dir}/rsyncd.pid`,
            `lock file = ${dir}/rsyncd.lock`,
            "[pub]",
            `  path = ${dir}/pub`,
            "  read only = yes",
            "  comment = Sightline lab files",
            ...(locked ? ["  auth users = lab", `  secrets file = ${dir}/secrets`, "  list = no"] : []),
            "",
          ].join("\n"),
        );
      },
      command: "/usr/bin/rsync",
      args: [
        "--daemon",
        "--no-detach",
        `--config=${dir}/rsyncd.conf`,
        `--address=${address}`,
        `--port=${port}`,
      ],
    }),
  },
  tls: {
    package: "openssl",
    binary: "/usr/bin/openssl",
    service: "https",
    product: /.*/,
    versionTold: false,
    start: ({ dir, address, port }) => ({
      prepare: () => {
        writeSelfSignedCertificate({
          keyFile: `${dir}/key.pem`,
          certFile: `${dir}/cert.pem`,
          commonName: "tls.lab.test",
          days: 30,
        });
      },
      command: "/usr/bin/openssl",
      args: [
        "s_server",
        "-quiet",
        "-accept",
        `${address}:${port}`,
        "-cert",
        `${dir}/cert.pem`,
        "-key",
        `${dir}/key.pem`,
        "-www",
      ],
    }),
  },
  snmpd: {
    package: "snmpd",
    binary: "/usr/sbin/snmpd",
    service: "snmp",
    product: /net-snmp/i,
    versionTold: false,
    transport: "udp",
    start: ({ dir, address, port, locked }) => ({
      prepare: () => {
        write(
          `${dir}/snmpd.conf`,
          [
            locked ? "rocommunity sightline-lab-secret 127.0.0.1" : "rocommunity public",
            "sysLocation Sightline lab",
            "sysContact lab@lab.test",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/snmpd",
      // -I -smux: SMUX would listen on 0.0.0.0:199 (every loopback address), outside the server's own.
      args: [
        "-f",
        "-Lo",
        "-C",
        "-I",
        "-smux",
        "-c",
        `${dir}/snmpd.conf`,
        "-p",
        `${dir}/snmpd.pid`,
        `udp:${address}:${port}`,
      ],
    }),
  },
};

function dovecot(protocol: "imap" | "pop3"): Definition {
  return {
    package: `dovecot-${protocol}d`,
    binary: "/usr/sbin/dovecot",
    service: protocol,
    product: /^Dovecot/,
    versionTold: false,
    start: ({ dir, address, port }) => ({
      prepare: () => {
        mkdirSync(`${dir}/run`, { recursive: true });
        write(
          `${dir}/dovecot.conf`,
          [
            `protocols = ${protocol}`,
            `listen = ${address}`,
            `base_dir = ${dir}/run`,
            `state_dir = ${dir}/state`,
            "ssl = no",
            "disable_plaintext_auth = no",
            "log_path = /dev/stderr",
            "auth_mechanisms = plain",
            `passdb {\n  driver = static\n  args = password=sightline-lab-secret\n}`,
            `userdb {\n  driver = static\n  args = uid=nobody gid=nogroup home=${dir}/home\n}`,
            `service ${protocol}-login {\n  inet_listener ${protocol} {\n    address = ${address}\n    port = ${port}\n  }\n` +
              `  inet_listener ${protocol}s {\n    port = 0\n  }\n}`,
            "service anvil {\n  chroot =\n}",
            "service imap-login {\n  chroot =\n}",
            "service pop3-login {\n  chroot =\n}",
            "",
          ].join("\n"),
        );
      },
      command: "/usr/sbin/dovecot",
      args: ["-F", "-c", `${dir}/dovecot.conf`],
    }),
  };
}

const nginxVersion = () => {
  // nginx -v writes to stderr.
  const result = spawnSync("/usr/sbin/nginx", ["-v"], { encoding: "utf8" });
  return /nginx\/([\d.]+)/.exec(`${result.stderr}${result.stdout}`)?.[1] ?? "";
};

const uid = (user: string) => Number(execFileSync("id", ["-u", user]).toString().trim());
const gid = (user: string) => Number(execFileSync("id", ["-g", user]).toString().trim());

/** dpkg-query's format for a package's version (a dpkg field, not a template literal). */
const DPKG_VERSION = "$" + "{Version}";

/** The Debian package's version, as dpkg reports it; undefined when it is not installed. */
export function packageVersion(name: string): string | undefined {
  try {
    const version = execFileSync("dpkg-query", ["-W", "-f", DPKG_VERSION, name], {
      stdio: ["ignore", "pipe", "ignore"],
    })
      .toString()
      .trim();
    return version || undefined;
  } catch {
    return undefined;
  }
}

const defaultUpstream = (version: string) => version.replace(/^\d+:/, "").replace(/[-+~].*$/, "");

export function groundTruth(name: RealServerName): GroundTruth | undefined {
  const definition = DEFINITIONS[name];
  const packaged = packageVersion(definition.package);
  if (!packaged || !existsSync(definition.binary)) return undefined;
  let version: string;
  try {
    version = name === "nginx" ? nginxVersion() : (definition.upstream ?? defaultUpstream)(packaged);
  } catch {
    version = defaultUpstream(packaged);
  }
  return {
    service: definition.service,
    product: definition.product,
    version,
    versionTold: definition.versionTold,
    package: definition.package,
    packageVersion: packaged,
    transport: definition.transport ?? "tcp",
  };
}

/** Waits until the port accepts a connection (TCP) or the process has been up a moment (UDP). */
async function ready(
  address: string,
  port: number,
  transport: "tcp" | "udp",
  child: ChildProcess,
  ms: number,
): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error("the server exited");
    if (transport === "udp") {
      await new Promise((r) => setTimeout(r, 500));
      return;
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: address, port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listened on ${address}:${port} within ${ms} ms`);
}

/** Starts one real server; throws (with the server's output) when it cannot. */
export async function startRealServer(
  name: RealServerName,
  options: { address: string; port: number; locked?: boolean; readyMs?: number },
): Promise<RealServer> {
  const definition = DEFINITIONS[name];
  const truth = groundTruth(name);
  if (!truth)
    throw new Error(
      `${name}: Debian's ${definition.package} is not installed (apt-get install ${definition.package})`,
    );
  const locked = options.locked ?? false;
  const dir = mkdtempSync(join(tmpdir(), `sightline-real-${name}-`));
  chmodSync(dir, 0o755);
  const { address, port } = options;
  const plan = definition.start({ dir, address, port, locked });
  let output = "";
  let child: ChildProcess | undefined;
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null && child.pid) {
      const exited = new Promise((resolve) => child?.once("exit", resolve));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
      const timer = setTimeout(() => {
        try {
          if (child?.pid) process.kill(-child.pid, "SIGKILL");
        } catch {}
      }, 3000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    plan.prepare?.();
    child = spawn(plan.command, plan.args, { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (chunk) => {
      output = `${output}${chunk}`.slice(-4000);
    });
    child.stderr?.on("data", (chunk) => {
      output = `${output}${chunk}`.slice(-4000);
    });
    child.once("error", (error) => {
      output += `\n${error.message}`;
    });
    await ready(address, port, truth.transport, child, options.readyMs ?? 30_000);
  } catch (error) {
    await stop();
    throw new Error(
      `${name} did not start on ${address}:${port}: ${(error as Error).message}\n${output.trim()}`,
    );
  }
  return { name, address, port, locked, truth, dir, stop };
}

/** The lab's servers and where they listen: one loopback address each, on the service's usual port. */
export const LAB_LAYOUT: Array<{ name: RealServerName; port: number }> = [
  { name: "redis", port: 6379 },
  { name: "memcached", port: 11211 },
  { name: "mariadb", port: 3306 },
  { name: "postgresql", port: 5432 },
  { name: "mosquitto", port: 1883 },
  { name: "vsftpd", port: 21 },
  { name: "openldap", port: 389 },
  { name: "openssh", port: 22 },
  { name: "dovecot-imap", port: 143 },
  { name: "dovecot-pop3", port: 110 },
  { name: "nsd", port: 53 },
  { name: "nginx", port: 80 },
  { name: "squid", port: 3128 },
  { name: "rsync", port: 873 },
  { name: "tls", port: 4433 },
];

export interface RealLab {
  servers: RealServer[];
  /** Servers that could not start, with the reason. */
  missing: Array<{ name: RealServerName; reason: string }>;
  stop(): Promise<void>;
}

/**
 * Starts the lab's servers, the i-th on `<base>.<i + 2>` at its usual port (or `port` from `ports`), all
 * exposed unless `locked`. `only` picks some.
 */
export async function startRealLab(options: {
  base: string;
  locked?: boolean;
  only?: RealServerName[];
  ports?: Partial<Record<RealServerName, number>>;
}): Promise<RealLab> {
  const layout = LAB_LAYOUT.filter((entry) => !options.only || options.only.includes(entry.name));
  const results = await Promise.allSettled(
    layout.map((entry, i) =>
      startRealServer(entry.name, {
        address: `${options.base}.${LAB_LAYOUT.indexOf(entry) + 2}`,
        port: options.ports?.[entry.name] ?? entry.port,
        locked: options.locked,
      }).then(undefined, (error: Error) => Promise.reject({ name: layout[i].name, reason: error.message })),
    ),
  );
  const servers: RealServer[] = [];
  const missing: RealLab["missing"] = [];
  for (const result of results)
    if (result.status === "fulfilled") servers.push(result.value);
    else missing.push(result.reason as { name: RealServerName; reason: string });
  return {
    servers,
    missing,
    stop: async () => {
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

/**
 * Under CI=true every server must have started (the test fails naming those that did not); elsewhere a
 * missing one is a skip with the reason. Answers the message to skip with, if any.
 */
export function requireServers(lab: RealLab): string | undefined {
  if (lab.missing.length === 0) return undefined;
  const message = lab.missing.map((m) => `${m.name}: ${m.reason.split("\n")[0]}`).join("; ");
  if (process.env.CI === "true") throw new Error(`Real-server lab servers did not start: ${message}`);
  return `some real servers did not start (install them as .ci/run does): ${message}`;
}
