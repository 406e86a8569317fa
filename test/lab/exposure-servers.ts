/**
 * Real servers from Debian's packages, each twice on its own loopback address: once exposed (the
 * misconfiguration an exposure check must prove) and once locked down (the fix, where nothing may be
 * raised). Addresses are `127.122.<n>.1` (exposed) and `127.122.<n>.2` (locked down), on the
 * services' usual ports; every server runs in the foreground in its own process group under a
 * temporary directory, and `stop()` ends exactly those groups.
 *
 * `.ci/run` installs the packages; a test that finds one missing fails under CI and skips elsewhere.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeSelfSignedCertificate } from "./openssl-certificate.ts";

export interface TwinServer {
  /** `redis`, `vsftpd`, … */
  name: string;
  ip: string;
  port: number;
  protocol: "tcp" | "udp";
  /** The nmap-style service name identification gives it. */
  service: string;
  exposed: boolean;
  /** Issue names the exposure checks must raise on it (none on a locked-down twin). */
  expected: string[];
}

interface Definition {
  name: string;
  binary: string;
  octet: number;
  port: number;
  protocol: "tcp" | "udp";
  service: string;
  expected: string[];
  /** Writes the configuration and answers the command line; `exposed` picks the twin. */
  command(
    dir: string,
    ip: string,
    exposed: boolean,
  ): {
    command: string;
    args: string[] /** For a server that puts itself in the background. */;
    stop?: () => void;
  };
  /** A locked-down twin that is not started at all (memcached has no authentication: it is bound elsewhere). */
  lockedDownAbsent?: boolean;
}

// Debian puts the daemons in /usr/sbin, which a non-login PATH may lack.
if (!(process.env.PATH ?? "").split(":").includes("/usr/sbin"))
  process.env.PATH = `${process.env.PATH}:/usr/sbin:/sbin`;

const write = (path: string, text: string) => writeFileSync(path, text.replace(/^ +/gm, ""));

export const DEFINITIONS: Definition[] = [
  {
    name: "redis",
    binary: "redis-server",
    octet: 1,
    port: 6379,
    protocol: "tcp",
    service: "redis",
    expected: ["redis_unauthenticated"],
    command: (dir, ip, exposed) => ({
      command: "redis-server",
      args: [
        "--bind",
        ip,
        "--port",
        "6379",
        "--save",
        "",
        "--appendonly",
        "no",
        "--protected-mode",
        "no",
        "--dir",
        dir,
        "--daemonize",
        "no",
        "--logfile",
        "",
        ...(exposed ? [] : ["--requirepass", randomBytes(12).toString("hex")]),
      ],
    }),
  },
  {
    name: "memcached",
    binary: "memcached",
    octet: 2,
    port: 11211,
    protocol: "tcp",
    service: "memcached",
    expected: ["memcached_unauthenticated"],
    lockedDownAbsent: true,
    command: (_dir, ip) => ({
      command: "memcached",
      args: ["-l", ip, "-p", "11211", "-U", "11211", "-u", "nobody"],
    }),
  },
  {
    name: "mosquitto",
    binary: "mosquitto",
    octet: 3,
    port: 1883,
    protocol: "tcp",
    service: "mqtt",
    expected: ["mqtt_anonymous_access"],
    command: (dir, ip, exposed) => {
      const conf = join(dir, "mosquitto.conf");
      const lines = [`listener 1883 ${ip}`, "persistence false", "log_dest none"];
      if (exposed) lines.push("allow_anonymous true");
      else {
        const passwords = join(dir, "passwords");
        execFileSync("mosquitto_passwd", ["-b", "-c", passwords, "device", randomBytes(12).toString("hex")]);
        chmodSync(passwords, 0o644);
        lines.push("allow_anonymous false", `password_file ${passwords}`);
      }
      write(conf, `${lines.join("\n")}\n`);
      return { command: "mosquitto", args: ["-c", conf] };
    },
  },
  {
    name: "vsftpd",
    binary: "vsftpd",
    octet: 4,
    port: 21,
    protocol: "tcp",
    service: "ftp",
    expected: ["ftp_anonymous_login"],
    command: (dir, ip, exposed) => {
      const anon = join(dir, "anon");
      const empty = join(dir, "empty");
      mkdirSync(anon, { recursive: true });
      mkdirSync(empty, { recursive: true });
      writeFileSync(join(anon, "README"), "lab files\n");
      chmodSync(anon, 0o555);
      chmodSync(dir, 0o755);
      const conf = join(dir, "vsftpd.conf");
      write(
        conf,
        `listen=YES
        listen_ipv6=NO
        listen_address=${ip}
        listen_port=21
        background=NO
        anonymous_enable=${exposed ? "YES" : "NO"}
        local_enable=NO
        write_enable=NO
        anon_root=${anon}
        secure_chroot_dir=${empty}
        seccomp_sandbox=NO
        xferlog_enable=NO
        ftpd_banner=Lab FTP
        `,
      );
      return { command: "vsftpd", args: [conf] };
    },
  },
  {
    name: "slapd",
    binary: "slapd",
    octet: 5,
    port: 389,
    protocol: "tcp",
    service: "ldap",
    expected: ["ldap_anonymous_read"],
    command: (dir, ip, exposed) => {
      const db = join(dir, "db");
      mkdirSync(db, { recursive: true });
      const conf = join(dir, "slapd.conf");
      write(
        conf,
        `include /etc/ldap/schema/core.schema
        include /etc/ldap/schema/cosine.schema
        include /etc/ldap/schema/inetorgperson.schema
        pidfile ${join(dir, "slapd.pid")}
        modulepath /usr/lib/ldap
        moduleload back_mdb
        access to dn.base="" by * read
        access to dn.base="cn=Subschema" by * read
        database mdb
        suffix "dc=lab,dc=test"
        rootdn "cn=admin,dc=lab,dc=test"
        rootpw ${randomBytes(12).toString("hex")}
        directory ${db}
        maxsize 10485760
        ${exposed ? "access to * by * read" : "access to * by users read by anonymous auth"}
        `,
      );
      const ldif = join(dir, "data.ldif");
      write(
        ldif,
        `dn: dc=lab,dc=test
        objectClass: dcObject
        objectClass: organization
        dc: lab
        o: Lab

        dn: ou=people,dc=lab,dc=test
        objectClass: organizationalUnit
        ou: people

        dn: uid=alice,ou=people,dc=lab,dc=test
        objectClass: inetOrgPerson
        uid: alice
        cn: Alice
        sn: Lab
        mail: alice@lab.test
        `,
      );
      execFileSync("slapadd", ["-f", conf, "-l", ldif], { stdio: "ignore" });
      return { command: "slapd", args: ["-f", conf, "-h", `ldap://${ip}:389/`, "-d", "0"] };
    },
  },
  {
    name: "squid",
    binary: "squid",
    octet: 6,
    port: 3128,
    protocol: "tcp",
    service: "http-proxy",
    expected: ["open_http_proxy"],
    command: (dir, ip, exposed) => {
      const conf = join(dir, "squid.conf");
      write(
        conf,
        `http_port ${ip}:3128
        http_access ${exposed ? "allow" : "deny"} all
        cache deny all
        pid_filename ${join(dir, "squid.pid")}
        access_log none
        cache_log /dev/null
        cache_store_log none
        coredump_dir ${dir}
        shutdown_lifetime 0 seconds
        pinger_enable off
        visible_hostname proxy-${exposed ? "open" : "closed"}.lab.test
        `,
      );
      return { command: "squid", args: ["-N", "-f", conf] };
    },
  },
  {
    name: "postfix",
    binary: "postfix",
    octet: 7,
    port: 25,
    protocol: "tcp",
    service: "smtp",
    expected: ["smtp_open_relay", "smtp_user_enumeration"],
    command: (dir, ip, exposed) => {
      for (const sub of ["queue", "data"]) mkdirSync(join(dir, sub), { recursive: true });
      execFileSync("cp", ["/etc/postfix/master.cf", join(dir, "master.cf")]);
      write(
        join(dir, "main.cf"),
        `compatibility_level = 3.6
        queue_directory = ${join(dir, "queue")}
        data_directory = ${join(dir, "data")}
        inet_interfaces = loopback-only
        inet_protocols = ipv4
        myhostname = mail.lab.test
        mydomain = lab.test
        mydestination = $myhostname, lab.test, localhost
        mynetworks = ${exposed ? "127.0.0.0/8" : "127.122.7.0/24"}
        smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
        disable_vrfy_command = ${exposed ? "no" : "yes"}
        alias_maps =
        alias_database =
        local_recipient_maps = proxy:unix:passwd.byname
        smtpd_banner = $myhostname ESMTP
        `,
      );
      // The inet smtpd on the twin's address only (Postfix wants inet_interfaces to name an interface's
      // own address, and 127.122.x.y is not one), and nothing chrooted (the queue is not set up for it).
      execFileSync("postconf", ["-c", dir, "-F", "*/*/chroot = n"]);
      execFileSync("postconf", ["-c", dir, "-M#", "smtp/inet"]);
      execFileSync("postconf", ["-c", dir, "-M", `${ip}:25/inet = ${ip}:25 inet n - n - - smtpd`]);
      // `check` makes the queue's directories, `set-permissions` gives them to the postfix user.
      execFileSync("postfix", ["-c", dir, "check"], { stdio: "ignore" });
      execFileSync("postfix", ["-c", dir, "set-permissions"], { stdio: "ignore" });
      // `start` puts the master daemon in the background (start-fg does not start when run from Node
      // without a terminal); `stop` ends it by its pid file.
      return {
        command: "postfix",
        args: ["-c", dir, "start"],
        stop: () => execFileSync("postfix", ["-c", dir, "stop"], { stdio: "ignore" }),
      };
    },
  },
  {
    name: "snmpd",
    binary: "snmpd",
    octet: 8,
    port: 161,
    protocol: "udp",
    service: "snmp",
    expected: ["snmp_default_community"],
    command: (dir, ip, exposed) => {
      const conf = join(dir, "snmpd.conf");
      write(
        conf,
        exposed
          ? `rocommunity public default\nsysDescr Sightline lab snmpd (exposed)\n`
          : `rouser lab-monitor authpriv\nsysDescr Sightline lab snmpd (locked)\n`,
      );
      return {
        command: "snmpd",
        args: [
          "-f",
          "-Lo",
          "-C",
          "-c",
          conf,
          "-p",
          join(dir, "pid"),
          "-M",
          "/usr/share/snmp/mibs",
          `udp:${ip}:161`,
        ],
      };
    },
  },
  {
    // rpcbind answers UDP only on the addresses given (-h), though it also listens on TCP 111 of every
    // address while it runs; it has no authentication to lock down, so the locked-down twin is absent.
    name: "rpcbind",
    binary: "rpcbind",
    octet: 11,
    port: 111,
    protocol: "udp",
    service: "rpcbind",
    expected: ["rpcbind_exposed"],
    lockedDownAbsent: true,
    command: (_dir, ip) => ({ command: "rpcbind", args: ["-f", "-h", ip] }),
  },
  {
    name: "rsync",
    binary: "rsync",
    octet: 9,
    port: 873,
    protocol: "tcp",
    service: "rsync",
    expected: ["rsync_modules_listed"],
    command: (dir, ip, exposed) => {
      const share = join(dir, "share");
      mkdirSync(share, { recursive: true });
      const conf = join(dir, "rsyncd.conf");
      write(
        conf,
        `pid file = ${join(dir, "rsyncd.pid")}
        use chroot = no
        [public]
        path = ${share}
        comment = Lab files
        read only = yes
        list = ${exposed ? "yes" : "no"}
        ${exposed ? "" : `auth users = backup\nsecrets file = ${join(dir, "secrets")}`}
        `,
      );
      writeFileSync(join(dir, "secrets"), `backup:${randomBytes(8).toString("hex")}\n`, { mode: 0o600 });
      return {
        command: "rsync",
        args: ["--daemon", "--no-detach", `--config=${conf}`, `--address=${ip}`, "--port=873"],
      };
    },
  },
  {
    name: "etcd",
    binary: "etcd",
    octet: 10,
    port: 2379,
    protocol: "tcp",
    service: "etcd",
    expected: ["etcd_unauthenticated"],
    command: (dir, ip, exposed) => {
      const peer = `http://${ip}:2380`;
      const common = [
        "--name",
        "lab",
        "--data-dir",
        join(dir, "data"),
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        `lab=${peer}`,
        "--log-level",
        "error",
      ];
      if (exposed)
        return {
          command: "etcd",
          args: [
            ...common,
            "--listen-client-urls",
            `http://${ip}:2379`,
            "--advertise-client-urls",
            `http://${ip}:2379`,
          ],
        };
      // Locked down: TLS with client certificates required (etcd's own recommendation).
      const key = join(dir, "etcd.key");
      const cert = join(dir, "etcd.crt");
      writeSelfSignedCertificate({
        keyFile: key,
        certFile: cert,
        commonName: "etcd.lab.test",
        days: 2,
        extensions: [`subjectAltName=IP:${ip}`],
      });
      return {
        command: "etcd",
        args: [
          ...common,
          "--listen-client-urls",
          `https://${ip}:2379`,
          "--advertise-client-urls",
          `https://${ip}:2379`,
          "--cert-file",
          cert,
          "--key-file",
          key,
          "--client-cert-auth",
          "--trusted-ca-file",
          cert,
        ],
      };
    },
  },
];

const onPath = (binary: string) =>
  ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/bin", "/sbin"].some((dir) =>
    existsSync(join(dir, binary)),
  );

/** Debian packages whose servers the lab runs (what `.ci/run` installs). */
export const PACKAGES =
  "redis-server memcached mosquitto vsftpd slapd ldap-utils squid postfix snmpd rpcbind rsync etcd-server";

/** The definitions whose binary is not installed. */
export const missingServers = (names?: string[]) =>
  DEFINITIONS.filter((d) => !names || names.includes(d.name))
    .filter((d) => !onPath(d.binary))
    .map((d) => d.name);

async function tcpReady(ip: string, port: number, until: number): Promise<boolean> {
  while (Date.now() < until) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: ip, port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

/** Whether a UDP socket is bound on ip:port (from /proc/net/udp). */
function udpBound(ip: string, port: number): boolean {
  const hex = ip
    .split(".")
    .map((part) => Number(part).toString(16).padStart(2, "0"))
    .reverse()
    .join("")
    .toUpperCase();
  const wanted = `${hex}:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  try {
    return execFileSync("cat", ["/proc/net/udp"]).toString().includes(wanted);
  } catch {
    return false;
  }
}

async function udpReady(ip: string, port: number, until: number): Promise<boolean> {
  while (Date.now() < until) {
    if (udpBound(ip, port)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

export interface TwinLab {
  servers: TwinServer[];
  stop(): Promise<void>;
}

/** Starts the named servers' twins (all by default). Throws when one does not come up in time. */
export async function startTwinLab(names?: string[]): Promise<TwinLab> {
  const root = mkdtempSync(join(tmpdir(), "sightline-twins-"));
  chmodSync(root, 0o755);
  const children: ChildProcess[] = [];
  const stoppers: Array<() => void> = [];
  const servers: TwinServer[] = [];
  const output: string[] = [];
  const stop = async () => {
    for (const stopper of stoppers.splice(0)) {
      try {
        stopper();
      } catch {
        // already stopped
      }
    }
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null || !child.pid) return resolve();
            const timer = setTimeout(() => {
              try {
                process.kill(-child.pid!, "SIGKILL");
              } catch {
                // gone
              }
            }, 3000);
            child.once("exit", () => {
              clearTimeout(timer);
              resolve();
            });
            try {
              process.kill(-child.pid!, "SIGTERM");
            } catch {
              clearTimeout(timer);
              resolve();
            }
          }),
      ),
    );
    rmSync(root, { recursive: true, force: true });
  };
  try {
    const chosen = DEFINITIONS.filter((d) => !names || names.includes(d.name));
    await Promise.all(
      chosen.flatMap((definition) =>
        [true, false].map(async (exposed) => {
          const ip = `127.122.${definition.octet}.${exposed ? 1 : 2}`;
          servers.push({
            name: definition.name,
            ip,
            port: definition.port,
            protocol: definition.protocol,
            service: definition.service,
            exposed,
            expected: exposed ? definition.expected : [],
          });
          if (!exposed && definition.lockedDownAbsent) return;
          const dir = join(root, `${definition.name}-${exposed ? "exposed" : "locked"}`);
          mkdirSync(dir, { recursive: true });
          chmodSync(dir, 0o755);
          const { command, args, stop: stopper } = definition.command(dir, ip, exposed);
          if (stopper) stoppers.push(stopper);
          const child = spawn(command, args, { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"] });
          children.push(child);
          child.stdout?.on("data", (chunk) => output.push(`${definition.name}: ${chunk}`.slice(0, 500)));
          child.stderr?.on("data", (chunk) => output.push(`${definition.name}: ${chunk}`.slice(0, 500)));
          child.on("error", (error) => output.push(`${definition.name}: ${error.message}`));
          const until = Date.now() + 15_000;
          const ready =
            definition.protocol === "udp"
              ? await udpReady(ip, definition.port, until)
              : await tcpReady(ip, definition.port, until);
          if (!ready)
            throw new Error(
              `${definition.name} (${exposed ? "exposed" : "locked down"}) did not listen on ${ip}:${definition.port}: ${output
                .filter((line) => line.startsWith(definition.name))
                .join(" ")
                .slice(0, 3000)}`,
            );
        }),
      ),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  servers.sort((a, b) => a.name.localeCompare(b.name) || Number(b.exposed) - Number(a.exposed));
  return { servers, stop };
}

// --- Samba, in a network namespace -----------------------------------------------------------------

export interface SambaTwins {
  /** [exposed, locked down] */
  servers: [TwinServer, TwinServer];
  /** What a scan must be allowed to touch to reach them. */
  block: string;
  stop(): Promise<void>;
}

/** Whether this machine can run the Samba twins: smbd installed and network namespaces allowed (root). */
export const sambaMissing = () =>
  onPath("smbd") && onPath("ip") ? undefined : "smbd (samba) or ip (iproute2)";

/**
 * Samba's smbd binds only to the addresses of a network interface, and 127.122.x.y is no interface's
 * own: so the twins run in a network namespace of their own, joined to this one by a veth pair on
 * 198.18.N.0/29 (the benchmarking range): `.1` here, `.2` the exposed twin (`restrict anonymous = 0`,
 * guests allowed), `.3` the locked-down twin (`restrict anonymous = 2`). `stop()` ends the processes
 * in that namespace (only ours are there) and deletes it, which removes the veth pair.
 */
export async function startSambaTwins(): Promise<SambaTwins> {
  const tag = randomBytes(3).toString("hex");
  const namespace = `sightline-smb-${tag}`;
  const [outside, inside] = [`slsmb${tag}a`, `slsmb${tag}b`];
  const net = `198.18.${2 + Math.floor(Math.random() * 250)}`;
  const root = mkdtempSync(join(tmpdir(), "sightline-samba-"));
  const ip = (...args: string[]) => execFileSync("ip", args, { stdio: "ignore" });
  const inNamespace = (...args: string[]) => ip("netns", "exec", namespace, ...args);
  const stop = async () => {
    let pids: number[] = [];
    try {
      pids = execFileSync("ip", ["netns", "pids", namespace])
        .toString()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      // no namespace
    }
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // gone
      }
    }
    for (let i = 0; i < 30 && pids.some((pid) => existsSync(`/proc/${pid}`)); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    for (const pid of pids.filter((pid) => existsSync(`/proc/${pid}`))) process.kill(pid, "SIGKILL");
    try {
      ip("netns", "del", namespace);
    } catch {
      // already gone
    }
    rmSync(root, { recursive: true, force: true });
  };
  const servers: [TwinServer, TwinServer] = [true, false].map((exposed) => ({
    name: "samba",
    ip: `${net}.${exposed ? 2 : 3}`,
    port: 445,
    protocol: "tcp" as const,
    service: "microsoft-ds",
    exposed,
    expected: exposed ? ["smb_null_session"] : [],
  })) as [TwinServer, TwinServer];
  try {
    ip("netns", "add", namespace);
    ip("link", "add", outside, "type", "veth", "peer", "name", inside);
    ip("link", "set", inside, "netns", namespace);
    ip("addr", "add", `${net}.1/29`, "dev", outside);
    ip("link", "set", outside, "up");
    inNamespace("ip", "addr", "add", `${net}.2/29`, "dev", inside);
    inNamespace("ip", "addr", "add", `${net}.3/29`, "dev", inside);
    inNamespace("ip", "link", "set", inside, "up");
    inNamespace("ip", "link", "set", "lo", "up");
    for (const server of servers) {
      const dir = join(root, server.exposed ? "exposed" : "locked");
      for (const sub of ["lock", "state", "cache", "private", "ncalrpc", "share"])
        mkdirSync(join(dir, sub), { recursive: true });
      const conf = join(dir, "smb.conf");
      write(
        conf,
        `[global]
        workgroup = LAB
        server role = standalone server
        interfaces = ${server.ip}
        bind interfaces only = yes
        smb ports = 445
        disable netbios = yes
        server min protocol = SMB2
        pid directory = ${dir}
        lock directory = ${dir}/lock
        state directory = ${dir}/state
        cache directory = ${dir}/cache
        private dir = ${dir}/private
        ncalrpc dir = ${dir}/ncalrpc
        log file = ${dir}/log
        restrict anonymous = ${server.exposed ? 0 : 2}
        map to guest = ${server.exposed ? "Bad User" : "Never"}
        [public]
        path = ${dir}/share
        read only = yes
        guest ok = ${server.exposed ? "yes" : "no"}
        `,
      );
      const child = spawn(
        "ip",
        ["netns", "exec", namespace, "smbd", "--foreground", "--no-process-group", `--configfile=${conf}`],
        // Its own process group: smbd signals its whole group when it shuts down.
        { stdio: "ignore", detached: true },
      );
      child.on("error", () => {});
      child.unref();
      if (!(await tcpReady(server.ip, 445, Date.now() + 15_000)))
        throw new Error(
          `smbd (${server.exposed ? "exposed" : "locked down"}) did not listen on ${server.ip}:445`,
        );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { servers, block: `${net}.0/29`, stop };
}
