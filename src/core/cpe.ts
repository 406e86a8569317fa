/**
 * CPE 2.3 formatted strings (`cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*`): parse, build, and
 * the vendor/product aliases under which NVD files the same software.
 */

export interface Cpe {
  part: string;
  vendor: string;
  product: string;
  version: string;
  update: string;
  edition: string;
  language: string;
  swEdition: string;
  targetSw: string;
  targetHw: string;
  other: string;
}

const FIELDS: Array<keyof Cpe> = [
  "part",
  "vendor",
  "product",
  "version",
  "update",
  "edition",
  "language",
  "swEdition",
  "targetSw",
  "targetHw",
  "other",
];

/** Splits on the colons that are not escaped, and unescapes each value (`idih\:` → `idih:`). */
function splitFormatted(text: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === "\\" && i + 1 < text.length) {
      current += text[++i];
    } else if (char === ":") {
      parts.push(current);
      current = "";
    } else current += char;
  }
  parts.push(current);
  return parts;
}

/** The CPE's fields, or undefined when the text is not a CPE 2.3 formatted string. */
export function parseCpe(text: string): Cpe | undefined {
  const parts = splitFormatted(text.trim());
  if (parts.length !== 13 || parts[0].toLowerCase() !== "cpe" || parts[1] !== "2.3") return undefined;
  if (!/^[aoh*]$/i.test(parts[2]) || !parts[3] || !parts[4]) return undefined;
  const cpe = {} as Cpe;
  FIELDS.forEach((field, index) => {
    cpe[field] = parts[index + 2].toLowerCase();
  });
  return cpe;
}

const escapeValue = (value: string) =>
  value === "*" || value === "-" ? value : value.replace(/[^A-Za-z0-9._-]/g, (char) => `\\${char}`);

/** A CPE 2.3 formatted string; missing fields are `*`. */
export function formatCpe(fields: Partial<Cpe> & Pick<Cpe, "part" | "vendor" | "product">): string {
  return `cpe:2.3:${FIELDS.map((field) => escapeValue(fields[field] || "*")).join(":")}`;
}

/** Is the value a concrete one (not ANY `*` nor NA `-`)? */
export const isConcrete = (value: string | undefined): value is string =>
  !!value && value !== "*" && value !== "-";

/**
 * Software NVD lists under more than one vendor/product name over the years; a lookup asks for all.
 * Only pairs seen in NVD's own records are listed.
 */
const ALIASES: string[][] = [
  ["f5:nginx", "nginx:nginx"],
  ["oracle:mysql", "mysql:mysql"],
  ["vsftpd_project:vsftpd", "beasts:vsftpd"],
  ["handlebarsjs:handlebars", "handlebars.js_project:handlebars.js"],
  ["elastic:kibana", "elasticsearch:kibana"],
  ["microsoft:internet_information_services", "microsoft:iis"],
];

export function vendorProductAliases(vendor: string, product: string): Array<[string, string]> {
  const key = `${vendor}:${product}`;
  const group = ALIASES.find((names) => names.includes(key)) ?? [key];
  return group.map((name) => name.split(":") as [string, string]);
}
