/** Every passive source, one file each; adding one is its file, its catalogue entry and a line here. */
import type { SourceId } from "../../core/sources.ts";
import { anubis } from "./anubis.ts";
import { binaryedge } from "./binaryedge.ts";
import { censys } from "./censys.ts";
import { certspotter } from "./certspotter.ts";
import { chaos } from "./chaos.ts";
import { commoncrawl } from "./commoncrawl.ts";
import { crtsh } from "./crtsh.ts";
import { fullhunt } from "./fullhunt.ts";
import { github } from "./github.ts";
import { hackertarget } from "./hackertarget.ts";
import { leakix } from "./leakix.ts";
import { netlas } from "./netlas.ts";
import { otx } from "./otx.ts";
import { rapiddns } from "./rapiddns.ts";
import { securitytrails } from "./securitytrails.ts";
import { shodan } from "./shodan.ts";
import { shodanidb } from "./shodanidb.ts";
import type { PassiveSource } from "./source.ts";
import { subdomaincenter } from "./subdomaincenter.ts";
import { thc } from "./thc.ts";
import { threatminer } from "./threatminer.ts";
import { urlscan } from "./urlscan.ts";
import { virustotal } from "./virustotal.ts";
import { wayback } from "./wayback.ts";

export const PASSIVE_SOURCES: Record<SourceId, PassiveSource> = {
  crtsh,
  certspotter,
  hackertarget,
  anubis,
  wayback,
  commoncrawl,
  urlscan,
  rapiddns,
  threatminer,
  thc,
  subdomaincenter,
  shodanidb,
  securitytrails,
  virustotal,
  censys,
  shodan,
  chaos,
  github,
  otx,
  binaryedge,
  fullhunt,
  netlas,
  leakix,
};
